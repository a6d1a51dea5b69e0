import { describe, expect, it } from 'vitest';
import type { Membership } from '../../src/protocol/cluster-types.js';
import { AuditLog, tenantOfKey } from '../../src/monitoring/audit-log.js';
import { checkFilter, MONITORING_SERVICES } from '../../src/monitoring/monitoring.js';
import { RATE_WINDOW_SECONDS, StreamStats } from '../../src/monitoring/stream-stats.js';

const member = (name: string, state: 'Pending' | 'Joining' | 'Joined' | 'Leaving' | 'Left') => ({ name, publicKey: 'k', address: '127.0.0.1', port: 1, httpPort: 2, zone: 'z', state });
const membership = (epoch: number, members: ReturnType<typeof member>[]): Membership => ({ epoch, members, change: undefined });

describe('monitoring - services and filters', () => {
  it('lists the ten services of the spec and takes a uri on streams and execution only', () => {
    expect([...MONITORING_SERVICES].sort()).toEqual(['actors', 'audit', 'cluster', 'execution', 'handoff', 'ssr', 'streams', 'system', 'transport', 'tsr']);
    expect(checkFilter('streams', 'demo', '/streams/demo/a/b')).toEqual({ tenant: 'demo', uri: '/streams/demo/a/b' });
    expect(checkFilter('execution', 'demo', '/execution/demo/sessions/x')).toEqual({ tenant: 'demo', uri: '/execution/demo/sessions/x' });
    expect(() => checkFilter('tsr', 'demo', '/streams/demo/a/b')).toThrow(/takes no uri/);
    expect(() => checkFilter('streams', 'demo', ['a', 'b'])).toThrow(/given once/);
  });
});

describe('monitoring - audit log', () => {
  it('logs the changes this node coordinated, from which version to which, and shows a tenant its own', () => {
    let now = Date.UTC(2024, 0, 1);
    const audit = new AuditLog(10, 'node-a', () => now);
    audit.definitionChanged('stream/demo/c/s', { fromVersion: undefined, toVersion: 1, coordinated: true }, false);
    now += 1000;
    audit.definitionChanged('stream/demo/c/s', { fromVersion: 1, toVersion: 2, coordinated: true }, false);
    audit.definitionChanged('stream/other/c/s', { fromVersion: 4, toVersion: 5, coordinated: true }, true);
    audit.definitionChanged('stream/demo/c/t', { fromVersion: undefined, toVersion: 7, coordinated: false }, false);
    audit.definitionChanged('api/settings', { fromVersion: undefined, toVersion: 1, coordinated: true }, false);
    expect(audit.visibleTo('demo')).toEqual([
      { at: '2024-01-01T00:00:00.000Z', change: 'definition', key: 'stream/demo/c/s', tenant: 'demo', by: 'node-a', fromVersion: null, toVersion: '1', deleted: false },
      { at: '2024-01-01T00:00:01.000Z', change: 'definition', key: 'stream/demo/c/s', tenant: 'demo', by: 'node-a', fromVersion: '1', toVersion: '2', deleted: false },
    ]);
    expect(audit.visibleTo('other').map((entry) => entry.change === 'definition' && entry.deleted)).toEqual([true]);
    expect(audit.visibleTo('system')).toHaveLength(4);
  });

  it('logs each member whose state changed, with the epochs and the coordinator; system sees them', () => {
    const audit = new AuditLog(10, 'a');
    audit.membershipChanged(membership(1, [member('a', 'Joined')]), 'a');
    audit.membershipChanged(membership(1, [member('a', 'Joined')]), 'a');
    audit.membershipChanged(membership(2, [member('a', 'Joined'), member('b', 'Pending')]), 'a');
    audit.membershipChanged(membership(4, [member('a', 'Joined'), member('b', 'Joined')]), 'a');
    const entries = audit.visibleTo('system').map((entry) => (entry.change === 'membership' ? [entry.node, entry.fromState, entry.toState, entry.fromEpoch, entry.toEpoch, entry.by] : []));
    expect(entries).toEqual([
      ['a', null, 'Joined', null, 1, 'a'],
      ['b', null, 'Pending', 1, 2, 'a'],
      ['b', 'Pending', 'Joined', 2, 4, 'a'],
    ]);
    expect(audit.visibleTo('demo')).toEqual([]);
  });

  it('keeps at most entriesMax entries, the newest, and counts the ones dropped', () => {
    const audit = new AuditLog(8, 'a');
    for (let version = 1; version <= 30; version++) audit.definitionChanged('stream/demo/c/s', { fromVersion: version - 1, toVersion: version, coordinated: true }, false);
    const kept = audit.visibleTo('demo');
    expect(kept).toHaveLength(8);
    expect(kept.map((entry) => (entry.change === 'definition' ? entry.toVersion : ''))).toEqual(['23', '24', '25', '26', '27', '28', '29', '30']);
    expect(audit.dropped).toBe(22);
  });

  it('reads the tenant of a definition key', () => {
    expect(tenantOfKey('stream/demo/c/s')).toBe('demo');
    expect(tenantOfKey('tenant/demo')).toBe('demo');
    expect(tenantOfKey('api/accounts/x')).toBeUndefined();
  });
});

describe('monitoring - stream counters', () => {
  it('sums accepted, refused and bytes, keeps the last write and the rate over the last minute', () => {
    let now = 1_000_000;
    const stats = new StreamStats(2, () => now);
    stats.record('t/c/a', { accepted: 30, refused: 2, bytes: 3000 });
    now += 1_000;
    stats.record('t/c/a', { accepted: 30, refused: 0, bytes: 3000 });
    expect(stats.get('t/c/a')).toEqual({ accepted: 60, refused: 2, bytes: 6000, lastWriteMs: now, ratePerSecond: 60 / RATE_WINDOW_SECONDS });
    now += RATE_WINDOW_SECONDS * 1000;
    expect(stats.get('t/c/a').ratePerSecond).toBe(0);
    expect(stats.get('t/c/a').accepted).toBe(60);
  });

  it('forgets the least recently written stream beyond streamsMax', () => {
    const stats = new StreamStats(2);
    stats.record('t/c/a', { accepted: 1, refused: 0, bytes: 1 });
    stats.record('t/c/b', { accepted: 1, refused: 0, bytes: 1 });
    stats.record('t/c/a', { accepted: 1, refused: 0, bytes: 1 });
    stats.record('t/c/c', { accepted: 1, refused: 0, bytes: 1 });
    expect(stats.get('t/c/b').accepted).toBe(0);
    expect(stats.get('t/c/a').accepted).toBe(2);
  });
});
