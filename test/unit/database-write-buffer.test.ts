// storage.writeBufferBytes reaches LevelDB: what a small write buffer has flushed to table
// files by now, a large one still holds in its log.

import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Database, DEFAULT_WRITE_BUFFER_BYTES } from '../../src/storage/database.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Table files after 6 MiB of synced batches into a database with this write buffer. */
async function tableFilesAfterWrites(writeBufferBytes: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-write-buffer-'));
  dirs.push(dir);
  const database = await Database.open(dir, { writeBufferBytes });
  const value = 'x'.repeat(64 * 1024);
  for (let batch = 0; batch < 24; batch += 1) {
    await database.batch(Array.from({ length: 4 }, (_, i) => ({ type: 'put' as const, sublevel: database.tsr, key: `k${batch}-${i}`, value })), { sync: true });
  }
  // LevelDB flushes a full buffer in the background: give it the time to.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const tables = readdirSync(join(dir, 'db')).filter((name) => name.endsWith('.ldb')).length;
  await database.close();
  return tables;
}

describe('database - write buffer', () => {
  it('is 32 MiB by default, and the size given is the one LevelDB uses', async () => {
    expect(DEFAULT_WRITE_BUFFER_BYTES).toBe(32 * 1024 * 1024);
    expect(await tableFilesAfterWrites(1024 * 1024)).toBeGreaterThan(0);
    expect(await tableFilesAfterWrites(DEFAULT_WRITE_BUFFER_BYTES)).toBe(0);
  });
});
