// Disk pressure, watched (docs/storage.md): the free bytes of the data folder's filesystem
// are read every few seconds. Below the floor (storage.diskFreeMinBytes) the database takes
// no more data, so that ingest is refused with 507 before LevelDB runs out of room; after a
// failed write, the database is reopened once the disk has room again, and writing resumes
// without a restart. /health, /ready, /metrics, _cat/nodes and the console read state().

import { statfs } from 'node:fs/promises';
import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import type { Timer, Timers } from '../lib/timers.js';
import type { Database, WriteRefusal } from './database.js';

/** What the node's disk allows now. */
export interface DiskState {
  /** Bytes this process may still write on the data folder's filesystem; null before the first reading. */
  freeBytes: number | null;
  /** Size of that filesystem; null before the first reading. */
  totalBytes: number | null;
  /** storage.diskFreeMinBytes: below it, ingest is refused. */
  floorBytes: number;
  /** Whether the node takes writes now. */
  writable: boolean;
  /** Why it does not (a failed write, the floor, a reopen that failed), else null. */
  reason: string | null;
  /** When it stopped taking writes (epoch ms), else null. */
  sinceMs: number | null;
}

export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

export interface DiskWatchOptions {
  /** The data folder. */
  folder: string;
  floorBytes: number;
  intervalMs: number;
  /** Reopening writes LevelDB's memory table out as a table: about this much room is needed first. */
  writeBufferBytes: number;
  nodeName: string;
  log: Logger;
  timers: Timers;
  /** Reads the filesystem's space (statfs; tests pass their own). */
  space?: (folder: string) => Promise<DiskSpace>;
  /** Told what a reopen found missing: acknowledged batches the reopened database lacks. */
  onLoss?: (reason: string) => void;
}

/** Room kept beyond the write buffer before a reopen is tried. */
const REOPEN_MARGIN_BYTES = 1024 * 1024;

export async function statfsSpace(folder: string): Promise<DiskSpace> {
  const stats = await statfs(folder);
  return { freeBytes: stats.bavail * stats.bsize, totalBytes: stats.blocks * stats.bsize };
}

export class DiskWatch {
  private space: DiskSpace | undefined;
  private timer: Timer | undefined;
  private checking: Promise<void> | undefined;
  /** Why the last reopen failed, while the database stays closed. */
  private reopenFailure: WriteRefusal | undefined;
  private belowFloor = false;
  private failureSeen = false;

  constructor(
    private readonly database: Database,
    private readonly options: DiskWatchOptions,
  ) {}

  start(): void {
    this.timer = this.options.timers.setInterval(() => void this.check(), this.options.intervalMs);
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** One reading: the floor applied, and a reopen tried when a write failed and the disk has room. One at a time. */
  check(): Promise<void> {
    this.checking ??= this.readAndAct().finally(() => (this.checking = undefined));
    return this.checking;
  }

  state(): DiskState {
    const refusal = this.reopenFailure ?? this.database.refusal;
    return {
      freeBytes: this.space?.freeBytes ?? null,
      totalBytes: this.space?.totalBytes ?? null,
      floorBytes: this.options.floorBytes,
      writable: refusal === undefined,
      reason: refusal?.reason ?? null,
      sinceMs: refusal?.sinceMs ?? null,
    };
  }

  private async readAndAct(): Promise<void> {
    const { folder, floorBytes, log } = this.options;
    try {
      this.space = await (this.options.space ?? statfsSpace)(folder);
    } catch (error) {
      log.warn({ err: error, folder }, 'the free space of the data folder cannot be read');
      return;
    }
    const low = this.space.freeBytes < floorBytes;
    this.database.setLowDisk(low ? `${folder} has ${this.space.freeBytes} bytes free, below the floor of ${floorBytes} (storage.diskFreeMinBytes)` : undefined);
    // Below the floor, the database refuses every write that adds data (ingest answers 507).
    assert(!low || this.database.writeRefusal(true) !== undefined, 'a disk below its floor still takes writes');
    if (low !== this.belowFloor) {
      if (low) log.warn({ folder, freeBytes: this.space.freeBytes, floorBytes }, 'the data folder is below its free-space floor: ingest is refused (507) until it has room');
      else log.info({ folder, freeBytes: this.space.freeBytes, floorBytes }, 'the data folder is above its free-space floor again');
      this.belowFloor = low;
    }
    if (this.database.needsReopen !== this.failureSeen) {
      this.failureSeen = this.database.needsReopen;
      if (this.failureSeen) log.error({ folder, reason: this.database.refusal?.reason, freeBytes: this.space.freeBytes }, 'a write failed: no writes until the database is reopened, once the disk has room');
    }
    if (this.database.needsReopen && this.space.freeBytes >= Math.max(floorBytes, this.options.writeBufferBytes + REOPEN_MARGIN_BYTES)) await this.reopen();
  }

  private async reopen(): Promise<void> {
    const { folder, log } = this.options;
    try {
      const lost = await this.database.reopen();
      assert(!this.database.needsReopen, 'a reopened database still waits to be reopened');
      this.reopenFailure = undefined;
      log.info({ folder, freeBytes: this.space?.freeBytes }, 'the database was reopened after a failed write: writes resume');
      if (lost !== undefined) {
        log.error({ folder, reason: lost }, 'the reopened database lacks acknowledged data');
        this.options.onLoss?.(lost);
      }
    } catch (error) {
      const reason = `${this.options.nodeName} could not reopen its database in ${folder} (${(error as { cause?: Error }).cause?.message ?? (error as Error).message})`;
      if (this.reopenFailure === undefined) log.error({ err: error, folder }, 'the database could not be reopened: it is closed until the disk has room');
      this.reopenFailure = { reason, sinceMs: this.reopenFailure?.sinceMs ?? Date.now() };
    }
  }
}

/** Why the node takes no writes, as /ready says it, or undefined while it does. */
export function diskRefusal(state: DiskState): string | undefined {
  return state.writable ? undefined : `storage takes no writes: ${state.reason ?? 'unknown'}`;
}
