// Size-limited filesystems for tests of a full disk (docs/storage.md): a tmpfs mounted on a
// fresh folder, resized with `mount -o remount,size=…`, and unmounted by unmountAll(), which
// every test and the chaos suite call in their cleanup, on failure too. Mounting needs root
// (CI runs as root); tests skip, saying so, without it.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** Every mount or umount gets this long; a umount that hangs is then detached (umount -l). */
const COMMAND_TIMEOUT_MS = 10_000;

const mounted = new Set<string>();

/** Why tmpfs cannot be mounted here, or undefined when it can. */
export function tmpfsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `a tmpfs mount needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root (CI runs as root): run the test as root to cover a full disk';
  return undefined;
}

export interface Tmpfs {
  dir: string;
  /** Grows or shrinks the filesystem (never below what it holds). */
  resize(sizeBytes: number): Promise<void>;
  /** Bytes in use (what statfs counts as taken). */
  usedBytes(): Promise<number>;
}

export async function mountTmpfs(sizeBytes: number, prefix = 'tributary-tmpfs-'): Promise<Tmpfs> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeOption(sizeBytes)}`, 'tmpfs', dir], { timeout: COMMAND_TIMEOUT_MS });
  mounted.add(dir);
  return {
    dir,
    resize: async (size) => void (await run('mount', ['-o', `remount,size=${sizeOption(size)}`, dir], { timeout: COMMAND_TIMEOUT_MS })),
    usedBytes: async () => {
      const stats = await statfs(dir);
      return (stats.blocks - stats.bfree) * stats.bsize;
    },
  };
}

/** Unmounts every tmpfs mounted here and removes its folder; the processes using them must be stopped first. */
export async function unmountAll(): Promise<string[]> {
  const problems: string[] = [];
  for (const dir of [...mounted]) {
    try {
      await run('umount', [dir], { timeout: COMMAND_TIMEOUT_MS });
    } catch (error) {
      // Busy or hung: detach it now; the kernel frees it once nothing uses it.
      problems.push(`umount ${dir}: ${(error as Error).message.split('\n')[0]}; detached instead`);
      await run('umount', ['-l', dir], { timeout: COMMAND_TIMEOUT_MS }).catch((lazy: unknown) => problems.push(`umount -l ${dir}: ${(lazy as Error).message.split('\n')[0]}`));
    }
    mounted.delete(dir);
    rmSync(dir, { recursive: true, force: true });
  }
  return problems;
}

/** tmpfs sizes in whole KiB (it rounds to pages anyway). */
function sizeOption(bytes: number): string {
  return `${Math.max(4, Math.ceil(bytes / 1024))}k`;
}
