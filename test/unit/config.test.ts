import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configKeys, loadConfig, readDefaults } from '../../src/config/config.js';
import { checkName } from '../../src/lib/names.js';
import { parseJoinToken } from '../../src/cluster/join-token.js';

const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A config file's path in a folder of its own, removed after the tests. */
function temporaryFile(): string {
  const folder = mkdtempSync(join(tmpdir(), 'tributary-config-'));
  folders.push(folder);
  return join(folder, 'c.json');
}

describe('config - sources', () => {
  it('defaults give node-1 on 127.0.0.1:8888/8889 with data in data/node-1', () => {
    const config = loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: {} });
    expect(config).toMatchObject({ name: 'node-1', host: '127.0.0.1', httpPort: 8888, peerPort: 8889, dataDir: join('data', 'node-1'), join: false });
  });

  it('names every key as a flag and a TRIBUTARY_ variable by one rule', () => {
    const keys = configKeys(readDefaults());
    expect(keys.find((key) => key.path.join('.') === 'limits.bodyBytesMax')).toMatchObject({
      flag: 'limits-body-bytes-max',
      env: 'TRIBUTARY_LIMITS_BODY_BYTES_MAX',
    });
  });

  it('file, then environment, then flags', () => {
    const file = temporaryFile();
    writeFileSync(file, JSON.stringify({ name: 'file', httpPort: 1, limits: { tagTimeoutMs: 7 } }));
    const config = loadConfig({ checkJoinToken: parseJoinToken,
      configFile: file,
      env: { TRIBUTARY_HTTP_PORT: '2', TRIBUTARY_JOIN: 'true' },
      flags: { 'http-port': '3' },
    });
    expect(config).toMatchObject({ name: 'file', httpPort: 3, join: true, limits: { tagTimeoutMs: 7, tagMemoryMb: 32 } });
  });

  it('refuses bad values naming the key', () => {
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: { TRIBUTARY_PEER_PORT: 'x' }, flags: {} })).toThrow(/'peerPort' from TRIBUTARY_PEER_PORT/);
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'http-port': '70000' } })).toThrow(/'httpPort'/);
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { name: 'a/b' } })).toThrow(/'name'/);
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'storage-write-buffer-bytes': '1000' } })).toThrow(/'storage.writeBufferBytes'/);
    expect(loadConfig({ checkJoinToken: parseJoinToken, env: { TRIBUTARY_STORAGE_WRITE_BUFFER_BYTES: '8388608' }, flags: {} }).storage.writeBufferBytes).toBe(8 * 1024 * 1024);
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'storage-disk-free-min-bytes': '-1' } })).toThrow(/'storage.diskFreeMinBytes' from --storage-disk-free-min-bytes/);
    expect(loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: {} }).storage).toMatchObject({ diskFreeMinBytes: 128 * 1024 * 1024, diskCheckIntervalMs: 1_000 });
    expect(loadConfig({ checkJoinToken: parseJoinToken, env: { TRIBUTARY_STORAGE_DISK_FREE_MIN_BYTES: '0' }, flags: { 'storage-disk-check-interval-ms': '250' } }).storage).toMatchObject({ diskFreeMinBytes: 0, diskCheckIntervalMs: 250 });
    const file = temporaryFile();
    writeFileSync(file, JSON.stringify({ colour: 'blue' }));
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, configFile: file, env: {}, flags: {} })).toThrow(/unknown key\(s\) colour/);    // The join token is checked by the function the caller gives (cluster's parser, in main.ts).
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'join-token': 'not a token' } })).toThrow(/^invalid config key 'joinToken': /);
  });
});

describe('config - errors name their source', () => {
  it('a flag, a variable, a config file, or the defaults file', () => {
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'http-port': '70000' } })).toThrow(/^invalid config key 'httpPort' from --http-port: /);
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: { TRIBUTARY_LOG_FORMAT: 'xml' }, flags: {} })).toThrow(/'logFormat' from TRIBUTARY_LOG_FORMAT/);
    const file = temporaryFile();
    writeFileSync(file, JSON.stringify({ limits: { tagTimeoutMs: -1 } }));
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, configFile: file, env: {}, flags: {} })).toThrow(`invalid config key 'limits.tagTimeoutMs' from ${file}`);
    writeFileSync(file, JSON.stringify({ cluster: { colour: 'blue' } }));
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, configFile: file, env: {}, flags: {} })).toThrow(`invalid config key 'cluster' from ${file}: unknown key(s) colour`);
    // A rule across keys names where one of them came from.
    expect(() => loadConfig({ checkJoinToken: parseJoinToken, env: {}, flags: { 'cluster-failure-timeout-ms': '100', 'cluster-heartbeat-interval-ms': '500' } })).toThrow(/'cluster' from --cluster-/);
  });
});

describe('names - checks', () => {
  it('accepts ordinary names and refuses /, .., control characters and long ones', () => {
    expect(checkName('stream', 'cpu-01.load_avg')).toBe('cpu-01.load_avg');
    expect(() => checkName('stream', 'a/b')).toThrow(/contains '\/'/);
    expect(() => checkName('stream', 'a..b')).toThrow(/'\.\.'/);
    expect(() => checkName('stream', 'a\u0000b')).toThrow(/control character/);
    expect(() => checkName('stream', 'x'.repeat(129))).toThrow(/longer than 128/);
    expect(() => checkName('stream', '')).toThrow(/non-empty/);
  });
});
