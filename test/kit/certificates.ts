// Test certificates made by the test: a cluster CA and one certificate per
// node, signed by it, naming 127.0.0.1 and localhost, good for server and client
// authentication (the peer port's mutual TLS). Made with the openssl command line (.ci/run
// installs it when missing), in a folder the kit removes with the nodes' data.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporaryDataDir } from './node-process.js';

export interface NodeCertificate {
  certFile: string;
  keyFile: string;
}

export interface TestCertificates {
  dir: string;
  caFile: string;
  caKeyFile: string;
  nodes: Record<string, NodeCertificate>;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA named `caName` and a certificate it signed for each of `names`. */
export function makeCertificates(names: readonly string[], caName = 'tributary-test-ca'): TestCertificates {
  const dir = temporaryDataDir();
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', `/CN=${caName}`], dir);
  const nodes: Record<string, NodeCertificate> = {};
  for (const name of names) {
    writeFileSync(
      join(dir, `${name}.ext`),
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
    );
    openssl(['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`], dir);
    nodes[name] = { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}.key`) };
  }
  return { dir, caFile: join(dir, 'ca.pem'), caKeyFile: join(dir, 'ca.key'), nodes };
}

/** The CLI flags that start a node with its certificate and the CA. */
export function tlsArgs(certificates: TestCertificates, name: string): string[] {
  const own = certificates.nodes[name]!;
  return ['--tls-cert-file', own.certFile, '--tls-key-file', own.keyFile, '--tls-ca-file', certificates.caFile];
}
