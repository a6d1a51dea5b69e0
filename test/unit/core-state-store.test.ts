// The cluster table outlives damage to the database: a copy beside it. A node that
// came back with an older table than it had written could start a change whose epoch another
// node already holds with other contents, and the tables would fork.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadCoreState, saveCoreState, wasMember } from '../../src/cluster/core-state-store.js';
import type { Membership, PersistedCoreState } from '../../src/protocol/cluster-types.js';
import { Database } from '../../src/storage/database.js';

const silent = pino({ level: 'silent' });
let folder: string;
let database: Database;

beforeEach(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tributary-core-state-'));
  database = await Database.open(folder);
});
afterEach(async () => {
  await database.close();
  rmSync(folder, { recursive: true, force: true });
});

function stateAt(epoch: number, port = 7001, incarnation = 0): PersistedCoreState {
  const membership: Membership = {
    epoch,
    members: [{ name: 'n1', address: '127.0.0.1', port, httpPort: 8001, zone: 'z1', publicKey: 'key-1', state: 'Joined', incarnation }],
    change: undefined,
  };
  return { membership, incoming: [] };
}

/** Damage writes the database's table back to an older one, or takes it. */
async function rollBack(to: PersistedCoreState | undefined): Promise<void> {
  if (to === undefined) await database.local.del('cluster-core');
  else await database.local.put('cluster-core', JSON.stringify(to));
}

describe('core state store - the table and its copy', () => {
  it('loads what was saved, and marks the folder as a member', async () => {
    expect(await loadCoreState(database, silent)).toBeUndefined();
    expect(wasMember(database)).toBe(false);
    await saveCoreState(database, stateAt(3));
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(3);
    expect(wasMember(database)).toBe(true);
  });

  it('a database that lost its table gets it from the copy', async () => {
    await saveCoreState(database, stateAt(4));
    await rollBack(undefined);
    const loaded = await loadCoreState(database, silent);
    expect(loaded?.membership).toEqual(stateAt(4).membership);
    expect(loaded?.incoming).toEqual([]);
  });

  it('a database rolled back to an older epoch gets the newer copy', async () => {
    await saveCoreState(database, stateAt(2));
    await saveCoreState(database, stateAt(5));
    await rollBack(stateAt(2));
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(5);
  });

  it('a copy that fails its checksum is ignored, and the database table is used', async () => {
    await saveCoreState(database, stateAt(6));
    const copy = join(folder, 'cluster-table');
    writeFileSync(copy, readFileSync(copy, 'utf8').replace('"epoch":6', '"epoch":9'));
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(6);
    await rollBack(undefined);
    expect(await loadCoreState(database, silent)).toBeUndefined();
  });

  it('a copy left behind (a crash between the two writes) is brought up at load, before damage can need it', async () => {
    await saveCoreState(database, stateAt(4));
    await rollBack(stateAt(5)); // the database's write landed, the copy's did not
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(5);
    await rollBack(undefined);
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(5);
  });

  it('a copy that cannot be read is ignored, and the database table is used', async () => {
    await saveCoreState(database, stateAt(3));
    rmSync(join(folder, 'cluster-table'));
    mkdirSync(join(folder, 'cluster-table')); // reading it fails (EISDIR)
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(3);
  });

  it('at one epoch, the newer address of a member is taken from the copy', async () => {
    await saveCoreState(database, stateAt(7, 7001, 0));
    await saveCoreState(database, stateAt(7, 7009, 1)); // the node moved: a new address, no new epoch
    await rollBack(stateAt(7, 7001, 0));
    const member = (await loadCoreState(database, silent))?.membership.members[0];
    expect([member?.port, member?.incarnation]).toEqual([7009, 1]);
  });

  it('a copy that holds the table is not written again: not at load, not at the next save of that table', async () => {
    await saveCoreState(database, stateAt(8));
    const copy = join(folder, 'cluster-table');
    const before = statSync(copy).ino;
    // A restart: another open of the same folder.
    await database.close();
    database = await Database.open(folder);
    expect((await loadCoreState(database, silent))?.membership.epoch).toBe(8);
    await saveCoreState(database, stateAt(8));
    expect(statSync(copy).ino).toBe(before);
    // A table as another node's decoder builds it: same fields, other key order.
    const reordered = { incoming: [], membership: { change: undefined, members: [{ ...stateAt(8).membership.members[0]!, name: 'n1' }].map(({ state, ...rest }) => ({ state, ...rest })), epoch: 8 } };
    await saveCoreState(database, reordered);
    expect(statSync(copy).ino).toBe(before);
    await saveCoreState(database, stateAt(9));
    expect(statSync(copy).ino).not.toBe(before);
  });
});
