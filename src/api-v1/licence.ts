// The licence: a tier and one pool of brains for the whole cluster.
//
// The pool is one definition (`api/licence-pool`) listing the brains that hold a slot.
// Taking a slot is a compare-and-set on it: the key's coordinator serialises writes and
// refuses a stale version, so two nodes creating at once cannot both take the last slot.
// A slot is given back when its brain is soft-deleted (the allowance caps the brains that
// can be seen and used). Slots that outlived their purpose are dropped the next time the
// pool is written: one whose brain was deleted but not given back (a crash between the two
// writes), and one reserved long ago whose brain was never written (a crash mid-create).

import type { Definitions } from '../storage/definition-store.js';
import { ProblemError } from './problems.js';
import { compareAndSet, KEYS, systemEnvironment, type Environment } from './store.js';

export type LicenceTier = 'free' | 'paid';

export interface Licence {
  tier: LicenceTier;
  brainAllowance: number;
}

export interface PoolSlot {
  brainId: string;
  reservedAt: string;
}

export interface LicencePoolValue {
  slots: PoolSlot[];
}

/** Settings of a brain that only the paid tier may turn on (spec, "Errors"). */
export const PAID_FEATURES = ['auditEnabled', 'advancedSecurityEnabled'] as const;
export type PaidFeature = (typeof PAID_FEATURES)[number];

/** A reservation whose brain has not appeared after this long was abandoned. */
export const RESERVATION_TTL_MS = 10 * 60_000;

export type BrainPresence = 'live' | 'deleted' | 'absent';

/** The slots still held: what the pool keeps when it is next written. Pure. */
export function heldSlots(slots: readonly PoolSlot[], presence: (brainId: string) => BrainPresence, nowMs: number): PoolSlot[] {
  return slots.filter((slot) => {
    const state = presence(slot.brainId);
    if (state === 'deleted') return false;
    if (state === 'absent') return nowMs - Date.parse(slot.reservedAt) < RESERVATION_TTL_MS;
    return true;
  });
}

/** Refuses turning a paid feature on under the free tier (on create and on PATCH). */
export function checkPaidFeatures(licence: Licence, settings: Partial<Record<PaidFeature, boolean>>): void {
  if (licence.tier === 'paid') return;
  const wanted = PAID_FEATURES.filter((feature) => settings[feature] === true);
  if (wanted.length > 0) {
    throw new ProblemError('licence-feature-unavailable', `${wanted.join(' and ')} need${wanted.length === 1 ? 's' : ''} the paid licence tier; this installation is on the free tier`, {
      details: { tier: licence.tier, features: wanted },
    });
  }
}

export interface LicenceState extends Licence {
  brainsUsed: number;
}

/** The cluster's licence as stored: set when the cluster is born, then only by an administrator. */
export interface StoredLicence extends Licence {
  updatedAt: string;
}

export class LicencePool {
  constructor(
    private readonly store: Definitions,
    /** This node's config: the licence a cluster is born with, and the one of a cluster made before it was stored. */
    private readonly configured: Licence,
    private readonly env: Environment = systemEnvironment,
  ) {}

  /**
   * One setting for the whole cluster: the stored licence, so a node that
   * joins with another config cannot change the tier or the allowance. A cluster made before
   * the licence was stored goes by each node's config until an administrator sets it.
   */
  get licence(): Licence {
    const stored = this.store.get<StoredLicence>(KEYS.licence)?.value;
    return stored === undefined ? this.configured : { tier: stored.tier, brainAllowance: stored.brainAllowance };
  }

  /** Whether this node's config says otherwise than the cluster's stored licence (worth a log line). */
  configDiffers(): boolean {
    const stored = this.store.get<StoredLicence>(KEYS.licence)?.value;
    return stored !== undefined && (stored.tier !== this.configured.tier || stored.brainAllowance !== this.configured.brainAllowance);
  }

  /** An administrator changes the tier or the allowance, for the whole cluster. */
  async setLicence(change: Partial<Licence>): Promise<LicenceState> {
    const next: StoredLicence = { ...this.licence, ...change, updatedAt: this.env.now().toISOString() };
    await this.store.put<StoredLicence>(KEYS.licence, next);
    return this.state();
  }

  /**
   * Writes the empty pool when a cluster is born (its first node's first start), so that
   * every later write is a compare-and-set on an existing version: the store has no
   * create-if-absent. A cluster made before the pool existed gets it on its first create;
   * two nodes doing that at the same moment could overwrite each other's first reservation,
   * so the pool starts from the live brains the node knows, which narrows that to brains
   * not yet written anywhere.
   */
  async initialise(): Promise<void> {
    if (this.store.get(KEYS.licence) === undefined) {
      await this.store.put<StoredLicence>(KEYS.licence, { ...this.configured, updatedAt: this.env.now().toISOString() });
    }
    await this.initialisePool();
  }

  private async initialisePool(): Promise<void> {
    if (this.store.get(KEYS.licencePool) !== undefined) return;
    const live = this.store
      .list<{ id: string; createdAt: string; deletedAt: string | null }>(KEYS.brainPrefix)
      .filter((brain) => brain.value.deletedAt === null);
    await this.store.put<LicencePoolValue>(KEYS.licencePool, { slots: live.map(({ value }) => ({ brainId: value.id, reservedAt: value.createdAt })) });
  }

  state(): LicenceState {
    const slots = this.store.get<LicencePoolValue>(KEYS.licencePool)?.value.slots ?? [];
    return { ...this.licence, brainsUsed: heldSlots(slots, (id) => this.presence(id), this.env.now().getTime()).length };
  }

  /** Takes a slot for `brainId`, or refuses with the licence problem. */
  async reserve(brainId: string): Promise<void> {
    if (this.store.get(KEYS.licencePool) === undefined) await this.initialisePool();
    const licence = this.licence;
    const allowance = licence.brainAllowance;
    await compareAndSet<LicencePoolValue, void>(this.store, KEYS.licencePool, (current) => {
      const now = this.env.now();
      const held = heldSlots(current?.value.slots ?? [], (id) => this.presence(id), now.getTime());
      if (held.length >= allowance) {
        throw new ProblemError('licence-brain-allowance-exceeded', `the licence allows ${allowance} brain${allowance === 1 ? '' : 's'} in this installation and all are in use; delete one or raise the allowance`, {
          details: { tier: licence.tier, brainAllowance: allowance, brainsUsed: held.length },
        });
      }
      return { value: { slots: [...held, { brainId, reservedAt: now.toISOString() }] }, result: undefined };
    });
  }

  async release(brainId: string): Promise<void> {
    await compareAndSet<LicencePoolValue, void>(this.store, KEYS.licencePool, (current) => {
      if (current === undefined || !current.value.slots.some((slot) => slot.brainId === brainId)) return { result: undefined };
      return { value: { slots: current.value.slots.filter((slot) => slot.brainId !== brainId) }, result: undefined };
    });
  }

  private presence(brainId: string): BrainPresence {
    const brain = this.store.get<{ deletedAt: string | null }>(KEYS.brainPrefix + brainId)?.value;
    if (brain === undefined) return 'absent';
    return brain.deletedAt === null ? 'live' : 'deleted';
  }
}
