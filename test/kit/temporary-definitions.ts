// A definition store over a fresh database in a temporary folder, for unit tests of the
// services that keep their state as definitions.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../src/storage/database.js';
import { DefinitionStore } from '../../src/storage/definition-store.js';

export class TemporaryDefinitions {
  private constructor(
    private readonly dir: string,
    private database: Database,
    public store: DefinitionStore,
  ) {}

  static async open(name: string): Promise<TemporaryDefinitions> {
    const dir = mkdtempSync(join(tmpdir(), `tributary-${name}-`));
    const database = await Database.open(dir);
    return new TemporaryDefinitions(dir, database, await DefinitionStore.open(database));
  }

  /** Closes the database and opens it again, as a restarted node would: the store read back from disk. */
  async reopen(): Promise<DefinitionStore> {
    await this.database.close();
    this.database = await Database.open(this.dir);
    this.store = await DefinitionStore.open(this.database);
    return this.store;
  }

  /** Closes the database and removes its folder. */
  async remove(): Promise<void> {
    await this.database.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
