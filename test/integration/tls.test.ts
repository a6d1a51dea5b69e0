// TLS with certificates the test makes: the front end answers HTTPS only,
// the peer port takes only clients with a certificate of the cluster CA, and two nodes with
// certificates of that CA join over mutual TLS.

import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerMethodPath } from '../../src/peer/proto.js';
import { makeCertificates, tlsArgs, type TestCertificates } from '../kit/certificates.js';
import { addNode, FAST_CLUSTER_ARGS, waitState } from '../kit/cluster.js';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';

let certificates: TestCertificates;
let stranger: TestCertificates;
let one: NodeProcess;

beforeAll(async () => {
  certificates = makeCertificates(['node-1', 'node-2']);
  stranger = makeCertificates(['node-x'], 'another-ca');
  const ca = readFileSync(certificates.caFile);
  one = await NodeProcess.start({ name: 'node-1', ca, args: [...FAST_CLUSTER_ARGS, ...tlsArgs(certificates, 'node-1')] });
});
afterAll(cleanup);

describe('tls - the front end', () => {
  it('answers HTTPS with the node certificate', async () => {
    expect(one.url).toMatch(/^https:/);
    const response = await client(one).get('/cluster/localNode');
    expect(response.status).toBe(200);
    expect(response.json.node.name).toBe('node-1');
  });

  it('refuses plaintext HTTP: no HTTP answer comes back', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(one.httpPort, '127.0.0.1', () => socket.write('GET /cluster/localNode HTTP/1.1\r\nHost: x\r\n\r\n'));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('close', () => resolve(received));
      socket.on('error', () => resolve(received));
      setTimeout(() => socket.destroy(), 5_000);
    });
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
    expect(answer).not.toContain('node-1');
  });
});

describe('tls - the peer port', () => {
  const call = (credentials: grpc.ChannelCredentials) =>
    new Promise<grpc.ServiceError | undefined>((resolve) => {
      const raw = new grpc.Client(`127.0.0.1:${one.peerPort}`, credentials);
      raw.makeUnaryRequest(peerMethodPath('Call'), (x: Buffer) => x, (x: Buffer) => x, Buffer.alloc(10), new grpc.Metadata(), { deadline: Date.now() + 5_000 }, (error) => {
        raw.close();
        resolve(error ?? undefined);
      });
    });

  it('refuses a plaintext client and a client whose certificate another CA signed, at the handshake', async () => {
    expect(await call(grpc.credentials.createInsecure())).toMatchObject({ code: grpc.status.UNAVAILABLE });
    const ca = readFileSync(certificates.caFile);
    const foreign = grpc.credentials.createSsl(ca, readFileSync(stranger.nodes['node-x']!.keyFile), readFileSync(stranger.nodes['node-x']!.certFile));
    expect(await call(foreign)).toMatchObject({ code: grpc.status.UNAVAILABLE });
    const none = grpc.credentials.createSsl(ca);
    expect(await call(none)).toMatchObject({ code: grpc.status.UNAVAILABLE });
  });

  it('lets a client with a certificate of the cluster CA in, where the caller header is checked next', async () => {
    const ca = readFileSync(certificates.caFile);
    const own = grpc.credentials.createSsl(ca, readFileSync(certificates.nodes['node-2']!.keyFile), readFileSync(certificates.nodes['node-2']!.certFile));
    expect(await call(own)).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });

  it('two nodes with certificates of the cluster CA join over mutual TLS', async () => {
    const two = await NodeProcess.start({ name: 'node-2', join: true, ca: readFileSync(certificates.caFile), args: [...FAST_CLUSTER_ARGS, ...tlsArgs(certificates, 'node-2')] });
    const added = await addNode(one, two);
    expect(added.status).toBe(200);
    await waitState(two, 'Joined', 60_000);
    expect((await client(two).get('/cluster/nodes')).json.nodes.map((node: { name: string }) => node.name)).toEqual(['node-1', 'node-2']);
  });
});
