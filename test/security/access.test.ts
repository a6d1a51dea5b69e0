// Attack classes "no authentication" and "no TLS": with tokens on, every route family is tried
// anonymously, with a forged token and with a token of another tenant (read only); nothing is
// accepted that should be refused. With TLS on, the front end and the peer port refuse
// plaintext.

import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates, tlsArgs } from '../kit/certificates.js';
import { cleanup, http, NodeProcess } from '../kit/node-process.js';
import { figure, ROUTES } from './kit.js';

const SECRET = 'access-suite-secret-0123456789';
let node: NodeProcess;
let otherTenantToken: string;

beforeAll(async () => {
  const certificates = makeCertificates(['node-1']);
  node = await NodeProcess.start({ name: 'node-1', ca: readFileSync(certificates.caFile), args: ['--auth', 'on', '--admin-secret', SECRET, ...tlsArgs(certificates, 'node-1')] });
  const admin = { authorization: `Bearer ${SECRET}` };
  await http(`${node.url}/cluster/tenants/other`, 'PUT', undefined, admin);
  const created = await http(`${node.url}/api/v1/admin/accounts`, 'POST', { name: 'other-reader' }, admin);
  otherTenantToken = created.json.token;
  await http(`${node.url}/api/v1/admin/accounts/other-reader`, 'PATCH', { permissions: { other: 'read' } }, admin);
}, 60_000);
afterAll(cleanup);

describe('security - access', () => {
  it('every route family, anonymous, forged or of another tenant: nothing accepted that should be refused', async () => {
    const callers: Array<[string, Record<string, string>]> = [
      ['anonymous', {}],
      ['forged', { authorization: 'Bearer trib_forged-token' }],
      ['other tenant', { authorization: `Bearer ${otherTenantToken}` }],
    ];
    const accepted: string[] = [];
    let tried = 0;
    for (const [who, headers] of callers) {
      for (const [method, template] of ROUTES) {
        const path = template.replace('{name}', 'x');
        const response = await http(`${node.url}${path}`, method, method === 'GET' ? undefined : { probe: true }, headers);
        tried += 1;
        // /api/v1 has its own gates: a brain or admin route without its credential is 401/403 too.
        if (response.status !== 401 && response.status !== 403) accepted.push(`${who}: ${method} ${path} → ${response.status} ${response.text.slice(0, 200)}`);
      }
    }
    figure('platform API without permission', { requests: tried, acceptedWhenShouldRefuse: accepted.length });
    expect(accepted).toEqual([]);
  });

  it('plaintext is refused on the HTTPS front end and on the peer port', async () => {
    const plaintext = (port: number, bytes: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
        let received = '';
        socket.on('data', (chunk) => (received += chunk.toString('latin1')));
        socket.on('close', () => resolve(received));
        socket.on('error', () => resolve(received));
        setTimeout(() => socket.destroy(), 3_000);
      });
    const front = await plaintext(node.httpPort, 'PUT /cluster/tenants/evil HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    const peer = await plaintext(node.peerPort, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    // A TLS server answers plaintext with a TLS alert record (type 21) or by closing, never HTTP.
    const refusedByTls = (answer: string) => answer === '' || answer.charCodeAt(0) === 21;
    figure('plaintext to TLS ports', { frontRefused: refusedByTls(front), peerRefused: refusedByTls(peer) });
    expect(refusedByTls(front)).toBe(true);
    expect(refusedByTls(peer)).toBe(true);
    expect((await http(`${node.url}/cluster/tenants/evil`, 'GET', undefined, { authorization: `Bearer ${SECRET}` })).status).toBe(404);
  });
});
