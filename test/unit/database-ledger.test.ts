// The commit ledger counts every synced batch but those written `outsideLedger` (a transfer's
// chunks): they are as durable, and carry no sequence key into the `local` sublevel.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/storage/database.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function put(database: Database, key: string) {
  return { type: 'put' as const, key: Buffer.concat([database.prefixOf(database.tsr), Buffer.from(key)]), value: Buffer.from(`value of ${key}`) };
}

describe('database - commit ledger', () => {
  it('numbers synced batches but those outside the ledger, which are as durable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-ledger-'));
    dirs.push(dir);
    let database = await Database.open(dir);
    await database.batchEncoded([put(database, 'a')], { sync: true });
    await database.batchEncoded([put(database, 'b')], { sync: true, outsideLedger: true });
    await database.batchEncoded([put(database, 'c')], { sync: true, outsideLedger: true });
    const localKeys = await database.local.keys().all();
    await database.close();

    database = await Database.open(dir);
    // One numbered batch: the ledger and the database both say 1, and only its key is in `local`.
    expect([database.storedSequence, database.ledgerSequence]).toEqual([1, 1]);
    expect(localKeys).toHaveLength(1);
    expect(await database.tsr.getMany(['a', 'b', 'c'])).toEqual(['value of a', 'value of b', 'value of c']);
    await database.batchEncoded([put(database, 'd')], { sync: true });
    await database.close();

    database = await Database.open(dir);
    expect([database.storedSequence, database.ledgerSequence]).toEqual([2, 2]);
    await expect(database.batchEncoded([put(database, 'e')], { sync: false, outsideLedger: true })).rejects.toThrow(/unsynced write asked to be outside the ledger/);
    await database.close();
  });
});
