import { describe, expect, it } from 'vitest';
import { checkFilter, filterSessions, type HostedSession } from '../../src/monitoring/monitoring.js';

const sessions: HostedSession[] = [
  { session: '/execution/demo/sessions/a', queries: [{ id: 'q', state: 'running', lateRows: 0 }] },
  { session: '/execution/demo/sessions/b', queries: [] },
  { session: '/execution/demox/sessions/c', queries: [] },
];

describe('monitoring - filters', () => {
  it("keeps a tenant's own sessions, not those of a tenant whose name it prefixes", () => {
    expect(filterSessions(sessions, { tenant: 'demo' }).map((each) => each.session)).toEqual(['/execution/demo/sessions/a', '/execution/demo/sessions/b']);
    expect(filterSessions(sessions, { tenant: 'demox' }).map((each) => each.session)).toEqual(['/execution/demox/sessions/c']);
  });

  it('gives the tenant system every session, and a uri exactly one', () => {
    expect(filterSessions(sessions, { tenant: 'system' })).toHaveLength(3);
    expect(filterSessions(sessions, { tenant: 'system', uri: '/execution/demox/sessions/c' })).toEqual([sessions[2]]);
    expect(filterSessions(sessions, { tenant: 'demo', uri: '/execution/demox/sessions/c' })).toEqual([]);
    expect(filterSessions(sessions, { tenant: 'demo', uri: '/execution/demo/sessions' })).toEqual([]);
  });

  it('refuses a uri given twice, empty, too long, or for a service without one', () => {
    expect(checkFilter('execution', 'demo', undefined)).toEqual({ tenant: 'demo' });
    expect(checkFilter('execution', 'demo', '/execution/demo/sessions/a')).toEqual({ tenant: 'demo', uri: '/execution/demo/sessions/a' });
    expect(() => checkFilter('execution', 'demo', ['x', 'y'])).toThrow(/given once/);
    expect(() => checkFilter('execution', 'demo', '')).toThrow(/non-empty/);
    expect(() => checkFilter('execution', 'demo', 'x'.repeat(1025))).toThrow(/at most 1024/);
    expect(() => checkFilter('handoff', 'demo', '/x')).toThrow(/takes no uri filter/);
    expect(() => checkFilter('execution', 42, undefined)).toThrow(/tenant/);
  });
});
