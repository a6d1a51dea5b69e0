// The chaos suite's disk-full nemesis (docs/storage.md): one node's data folder lives on a
// size-limited tmpfs of its own. The fault shrinks that filesystem to what it holds plus a
// few MiB, so that it fills during ingest, and grows it again when the fault ends: the node
// must refuse what it cannot make durable (507, hints for it elsewhere), acknowledge nothing
// it could lose, and take writes again by itself. Mounting needs root (CI runs as root);
// cleanup unmounts (test/kit/tmpfs.ts), on failure too.

import { join } from 'node:path';
import { mountTmpfs, tmpfsUnavailable, type Tmpfs } from '../kit/tmpfs.js';

/** The victim's filesystem before and after the fault: bigger than a run ever writes. */
const ROOMY_BYTES = 4 * 1024 * 1024 * 1024;
/** Room left when the fault starts: the writers fill it within seconds. */
const HEADROOM_BYTES = 4 * 1024 * 1024;

export interface DiskFullPlan {
  /** The node whose data folder is on the tmpfs. */
  victim: string;
  /** Its storage.diskFreeMinBytes: 0 lets LevelDB itself run out of room (a failed write); more refuses ingest first. */
  floorBytes: number;
}

export class ChaosDisk {
  private tmpfs: Tmpfs | undefined;

  constructor(readonly plan: DiskFullPlan) {}

  /** Why a run with this nemesis cannot run here, or undefined. */
  static unavailable(): string | undefined {
    return tmpfsUnavailable();
  }

  /** Mounts the victim's filesystem; returns the data folder to start it with. */
  async prepare(): Promise<string> {
    this.tmpfs = await mountTmpfs(ROOMY_BYTES, `tributary-chaos-${this.plan.victim}-`);
    return join(this.tmpfs.dir, this.plan.victim);
  }

  /** The node flags of the victim: its floor, and a quick look at its disk. */
  args(): string[] {
    return ['--storage-disk-free-min-bytes', String(this.plan.floorBytes), '--storage-disk-check-interval-ms', '250'];
  }

  /** Shrinks the filesystem to what it holds and a little more; says what it did. */
  async fill(): Promise<string> {
    const tmpfs = this.mounted();
    const used = await tmpfs.usedBytes();
    await tmpfs.resize(used + HEADROOM_BYTES);
    return `${this.plan.victim}'s disk shrunk to ${mib(used + HEADROOM_BYTES)} (${mib(used)} used, floor ${mib(this.plan.floorBytes)})`;
  }

  async grow(): Promise<string> {
    const tmpfs = this.mounted();
    const used = await tmpfs.usedBytes();
    await tmpfs.resize(ROOMY_BYTES);
    return `${this.plan.victim}'s disk grown to ${mib(ROOMY_BYTES)} (${mib(used)} used)`;
  }

  private mounted(): Tmpfs {
    if (this.tmpfs === undefined) throw new Error('chaos: the disk-full nemesis was not prepared');
    return this.tmpfs;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
