// TLS material of a node: its certificate and key, and the cluster CA. The front end serves
// HTTPS with the certificate; the peer port speaks mutual TLS: it takes connections only from
// clients whose certificate the cluster CA signed, and dials peers with its own certificate,
// checking theirs against the CA and the address dialled (the identity proof of POST
// /cluster/nodes then binds the node key, which signs the reply, to that address, which the
// certificate names). Every node's certificate must name the address other nodes reach it at
// (advertiseAddress, as an IP or DNS subject alternative name) and allow both server and client
// authentication.

import { readFileSync } from 'node:fs';
import { ConfigError } from './config.js';

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
}

export interface TlsPaths {
  certFile: string | null;
  keyFile: string | null;
  caFile: string | null;
}

/** The files the config names, read; undefined when TLS is off. A file that cannot be read refuses the start. */
export function loadTls(paths: TlsPaths): TlsMaterial | undefined {
  if (paths.certFile === null || paths.keyFile === null || paths.caFile === null) return undefined;
  return { cert: readPem('tls.certFile', paths.certFile), key: readPem('tls.keyFile', paths.keyFile), ca: readPem('tls.caFile', paths.caFile) };
}

function readPem(key: string, path: string): Buffer {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new ConfigError(`invalid config key '${key}': cannot read ${path}: ${(error as Error).message}`);
  }
  if (!bytes.toString('utf8').includes('-----BEGIN ')) throw new ConfigError(`invalid config key '${key}': ${path} is not a PEM file`);
  return bytes;
}
