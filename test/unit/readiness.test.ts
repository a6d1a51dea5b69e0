// The list of reasons a node refuses clients (src/ops/readiness.ts): every reason that
// holds is answered, the first one is what the serving gate says, and each is logged once
// when it starts and once when it ends, however often it is looked at.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Readiness } from '../../src/ops/readiness.js';

/** A logger whose lines the test reads back. */
function recordingLogger() {
  const lines: Array<{ level: number; reason: string; msg: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines: () => lines.map((line) => `${line.level === 40 ? 'warn' : 'info'} ${line.reason}: ${line.msg}`) };
}

describe('readiness - reasons to refuse clients', () => {
  it('answers every reason that holds, in order, and the first to the gate', () => {
    const { log } = recordingLogger();
    let stopping = false;
    let unconfirmed = true;
    const readiness = new Readiness(
      [
        { name: 'stopping', check: () => (stopping ? 'stopping' : undefined) },
        { name: 'cluster', check: () => (unconfirmed ? 'table unconfirmed' : undefined) },
      ],
      log,
    );
    expect(readiness.current()).toEqual([{ name: 'cluster', message: 'table unconfirmed' }]);
    stopping = true;
    expect(readiness.refusal()).toBe('stopping');
    expect(readiness.current().map((refusal) => refusal.name)).toEqual(['stopping', 'cluster']);
    stopping = false;
    unconfirmed = false;
    expect(readiness.current()).toEqual([]);
    expect(readiness.refusal()).toBeUndefined();
  });

  it('a reason that only stops writes (a full disk) is answered by /ready but does not close the gate', () => {
    const { log } = recordingLogger();
    let full = true;
    const readiness = new Readiness([{ name: 'disk', check: () => (full ? 'storage takes no writes: below the floor' : undefined), writesOnly: true }], log);
    expect(readiness.current()).toEqual([{ name: 'disk', message: 'storage takes no writes: below the floor' }]);
    expect(readiness.refusal()).toBeUndefined();
    full = false;
    expect(readiness.current()).toEqual([]);
  });

  it('logs a reason once when it starts, again only if its message changes, and once when it ends', () => {
    const { log, lines } = recordingLogger();
    let state: string | undefined = 'node n is Pending';
    let disk: string | undefined;
    const readiness = new Readiness([{ name: 'cluster', check: () => state }, { name: 'disk', check: () => disk }], log);
    for (let look = 0; look < 5; look += 1) readiness.current();
    state = 'node n is Joining';
    readiness.current();
    disk = 'disk not writable';
    readiness.current();
    state = undefined;
    for (let look = 0; look < 3; look += 1) readiness.current();
    disk = undefined;
    readiness.current();
    readiness.current();
    expect(lines()).toEqual([
      'warn cluster: not serving clients: node n is Pending',
      'warn cluster: not serving clients: node n is Joining',
      'warn disk: not serving clients: disk not writable',
      'info cluster: still not serving clients for another reason; cleared: node n is Joining',
      'info disk: serving clients again; cleared: disk not writable',
    ]);
  });

  it('refuses two reasons of one name', () => {
    const { log } = recordingLogger();
    expect(() => new Readiness([{ name: 'a', check: () => undefined }, { name: 'a', check: () => undefined }], log)).toThrow(/distinct names/);
  });
});
