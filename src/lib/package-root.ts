import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The folder of package.json, found by walking up (so it holds at any depth): two levels up from src/lib/ under tests, three from dist/src/lib/. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'config', 'default.json'))) return (root = dir);
  }
  throw new Error(`no package root (package.json with config/default.json) above ${here}`);
}
