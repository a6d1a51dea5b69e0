// Brains (spec, "Resources", "States and transitions"). A brain is one definition
// (`api/brains/<uuid>`); the neuron types it was seeded with are another
// (`api/neuron-types/<uuid>`), its data rather than its settings. A service account sees and
// acts on the brains it owns; anyone else's brain is "not found", so ids do not leak. DELETE is
// soft: the brain gets `deletedAt`, disappears from reads and lists, gives its licence slot
// back, and its record and neuron types stay stored.

import { isPlainObject, quoteForMessage } from '../lib/json.js';
import type { Definitions } from '../storage/definition-store.js';
import type { StoredAccount } from './accounts.js';
import { checkPaidFeatures, type LicencePool } from './licence.js';
import { ProblemError } from './problems.js';
import { compareAndSet, KEYS, systemEnvironment, type Environment } from './store.js';
import type { BrainTemplates, NeuronType } from './templates.js';

export interface StoredBrain {
  id: string;
  name: string;
  description: string;
  /** The id of the service account that created it; never changes. */
  ownerUserId: string;
  brainTemplateId: string | null;
  auditEnabled: boolean;
  advancedSecurityEnabled: boolean;
  createdAt: string;
  updatedAt: string;
  /** Set by DELETE (soft delete); null while the brain is visible. */
  deletedAt: string | null;
}

export interface StoredNeuronTypes {
  brainId: string;
  neuronTypes: NeuronType[];
}

/** A brain as the interface shows it. */
export type Brain = Omit<StoredBrain, 'deletedAt'> & { neuronTypes: NeuronType[] };

/** A brain as an administrator sees it, soft-deleted or not. */
export type StoredBrainView = StoredBrain & { neuronTypes: NeuronType[] };

export interface BrainCreate {
  name: string;
  description: string;
  brainTemplateId: string | null;
  auditEnabled: boolean;
  advancedSecurityEnabled: boolean;
}

/** The fields PATCH may change; every other field of the body is ignored (spec). */
export const PATCH_WHITELIST = ['name', 'description', 'auditEnabled', 'advancedSecurityEnabled'] as const;
export type BrainPatch = Partial<Pick<StoredBrain, (typeof PATCH_WHITELIST)[number]>>;

export const NAME_CHARS_MAX = 200;
export const DESCRIPTION_CHARS_MAX = 2_000;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The create body: named fields checked, anything else ignored. Pure. */
export function parseCreate(body: unknown): BrainCreate {
  const object = requireObject(body);
  const name = object.name;
  if (name === undefined) throw new ProblemError('invalid-request', 'field name is required');
  const template = object.brainTemplateId;
  if (template !== undefined && template !== null && (typeof template !== 'string' || template === '')) {
    throw new ProblemError('invalid-request', 'field brainTemplateId must be a non-empty string or null');
  }
  return {
    name: checkName(name),
    description: object.description === undefined ? '' : checkDescription(object.description),
    brainTemplateId: (template as string | null | undefined) ?? null,
    auditEnabled: object.auditEnabled === undefined ? false : checkBoolean('auditEnabled', object.auditEnabled),
    advancedSecurityEnabled: object.advancedSecurityEnabled === undefined ? false : checkBoolean('advancedSecurityEnabled', object.advancedSecurityEnabled),
  };
}

/** The PATCH body: whitelisted fields checked, anything else (ownerUserId, id, …) ignored. Pure. */
export function parsePatch(body: unknown): BrainPatch {
  const object = requireObject(body);
  const patch: BrainPatch = {};
  if (object.name !== undefined) patch.name = checkName(object.name);
  if (object.description !== undefined) patch.description = checkDescription(object.description);
  if (object.auditEnabled !== undefined) patch.auditEnabled = checkBoolean('auditEnabled', object.auditEnabled);
  if (object.advancedSecurityEnabled !== undefined) patch.advancedSecurityEnabled = checkBoolean('advancedSecurityEnabled', object.advancedSecurityEnabled);
  return patch;
}

export interface BrainServiceDeps {
  store: Definitions;
  templates: BrainTemplates;
  pool: LicencePool;
  env?: Environment;
}

export class BrainService {
  private readonly store: Definitions;
  private readonly templates: BrainTemplates;
  private readonly pool: LicencePool;
  private readonly env: Environment;

  constructor(deps: BrainServiceDeps) {
    this.store = deps.store;
    this.templates = deps.templates;
    this.pool = deps.pool;
    this.env = deps.env ?? systemEnvironment;
  }

  /** The caller's visible brains, oldest first. */
  list(caller: StoredAccount): Brain[] {
    return this.store
      .list<StoredBrain>(KEYS.brainPrefix)
      .map((definition) => definition.value)
      .filter((brain) => brain.ownerUserId === caller.id && brain.deletedAt === null)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
      .map((brain) => this.view(brain));
  }

  get(caller: StoredAccount, brainId: string): Brain {
    return this.view(this.visible(caller, brainId));
  }

  async create(caller: StoredAccount, body: unknown): Promise<Brain> {
    const request = parseCreate(body);
    checkPaidFeatures(this.pool.licence, request);
    const template = request.brainTemplateId === null ? undefined : this.templates.get(request.brainTemplateId);
    if (request.brainTemplateId !== null && template === undefined) {
      throw new ProblemError('unknown-brain-template', `brain template ${quoteForMessage(request.brainTemplateId)} does not exist; GET /api/v1/brain-templates lists them`, {
        details: { brainTemplateId: request.brainTemplateId },
      });
    }
    const id = this.env.randomUUID();
    await this.pool.reserve(id);
    const now = this.env.now().toISOString();
    const brain: StoredBrain = { id, ...request, ownerUserId: caller.id, createdAt: now, updatedAt: now, deletedAt: null };
    try {
      // Neuron types first: a brain that can be read has its types.
      if (template !== undefined) {
        await this.store.put<StoredNeuronTypes>(KEYS.neuronTypesPrefix + id, { brainId: id, neuronTypes: template.neuronTypes });
      }
      await this.store.put<StoredBrain>(KEYS.brainPrefix + id, brain);
    } catch (error) {
      await this.pool.release(id).catch(() => undefined);
      throw error;
    }
    return this.view(brain);
  }

  async patch(caller: StoredAccount, brainId: string, body: unknown): Promise<Brain> {
    this.visible(caller, brainId);
    const patch = parsePatch(body);
    checkPaidFeatures(this.pool.licence, patch);
    const brain = await compareAndSet<StoredBrain, StoredBrain>(this.store, KEYS.brainPrefix + brainId, (current) => {
      const stored = this.owned(caller, brainId, current?.value);
      const changed = PATCH_WHITELIST.some((field) => patch[field] !== undefined && patch[field] !== stored[field]);
      if (!changed) return { result: stored };
      const value = { ...stored, ...patch, updatedAt: this.env.now().toISOString() };
      return { value, result: value };
    });
    return this.view(brain);
  }

  async delete(caller: StoredAccount, brainId: string): Promise<void> {
    this.visible(caller, brainId);
    await compareAndSet<StoredBrain, void>(this.store, KEYS.brainPrefix + brainId, (current) => {
      const stored = this.owned(caller, brainId, current?.value);
      const now = this.env.now().toISOString();
      return { value: { ...stored, deletedAt: now, updatedAt: now }, result: undefined };
    });
    // The slot goes back after the brain is gone; should this fail, the next write of the
    // pool drops the slot of a deleted brain anyway (licence.ts).
    await this.pool.release(brainId);
  }

  /** Any brain, soft-deleted ones included, with its stored neuron types (admin). */
  inspect(brainId: string): StoredBrainView {
    const brain = UUID_PATTERN.test(brainId) ? this.store.get<StoredBrain>(KEYS.brainPrefix + brainId)?.value : undefined;
    if (brain === undefined) throw new ProblemError('not-found', `brain ${quoteForMessage(brainId)} does not exist`);
    return { ...brain, neuronTypes: this.neuronTypes(brain.id) };
  }

  private visible(caller: StoredAccount, brainId: string): StoredBrain {
    const stored = UUID_PATTERN.test(brainId) ? this.store.get<StoredBrain>(KEYS.brainPrefix + brainId)?.value : undefined;
    return this.owned(caller, brainId, stored);
  }

  private owned(caller: StoredAccount, brainId: string, brain: StoredBrain | undefined): StoredBrain {
    if (brain === undefined || brain.deletedAt !== null || brain.ownerUserId !== caller.id) {
      throw new ProblemError('not-found', `brain ${quoteForMessage(brainId)} does not exist`);
    }
    return brain;
  }

  private view(brain: StoredBrain): Brain {
    const { deletedAt: _deletedAt, ...visible } = brain;
    return { ...visible, neuronTypes: this.neuronTypes(brain.id) };
  }

  private neuronTypes(brainId: string): NeuronType[] {
    return this.store.get<StoredNeuronTypes>(KEYS.neuronTypesPrefix + brainId)?.value.neuronTypes ?? [];
  }
}

function requireObject(body: unknown): Record<string, unknown> {
  if (!isPlainObject(body)) throw new ProblemError('invalid-request', 'the request body must be a JSON object');
  return body;
}

function checkName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > NAME_CHARS_MAX) {
    throw new ProblemError('invalid-request', `field name must be a string of 1-${NAME_CHARS_MAX} characters, not only spaces`);
  }
  return value;
}

function checkDescription(value: unknown): string {
  if (typeof value !== 'string' || value.length > DESCRIPTION_CHARS_MAX) {
    throw new ProblemError('invalid-request', `field description must be a string of at most ${DESCRIPTION_CHARS_MAX} characters`);
  }
  return value;
}

function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new ProblemError('invalid-request', `field ${field} must be true or false`);
  return value;
}
