// What every codec of a peer message is built from: the plain object protobufjs gives for a
// proto message, and readers that check each field's type and name the field they refuse.
// A body is untrusted even when its signature holds (a peer may run other code, or be
// broken): a field of the wrong type, an int64 beyond 2^53 or an unknown enum value is a
// BadPeerMessageError, never passed on half-checked.

import { BadPeerMessageError } from './errors.js';

export type ProtoObject = Record<string, unknown>;

/** Maps a TypeScript value to the plain object of its proto message and back, checking as it reads. */
export interface BodyCodec<T> {
  toProto(value: T): ProtoObject;
  fromProto(object: ProtoObject): T;
}

export function field(object: ProtoObject, key: string): unknown {
  return object[key];
}

export function refuse(key: string, expected: string): never {
  throw new BadPeerMessageError(`field ${key}: expected ${expected}`);
}

export function str(object: ProtoObject, key: string): string {
  const value = field(object, key);
  return typeof value === 'string' ? value : refuse(key, 'a string');
}

export function optionalStr(object: ProtoObject, key: string): string | undefined {
  return field(object, key) === undefined ? undefined : str(object, key);
}

export function int(object: ProtoObject, key: string): number {
  const value = field(object, key);
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : refuse(key, 'a safe integer');
}

export function optionalInt(object: ProtoObject, key: string): number | undefined {
  return field(object, key) === undefined ? undefined : int(object, key);
}

export function num(object: ProtoObject, key: string): number {
  const value = field(object, key);
  return typeof value === 'number' && Number.isFinite(value) ? value : refuse(key, 'a finite number');
}

export function bool(object: ProtoObject, key: string): boolean {
  const value = field(object, key);
  return typeof value === 'boolean' ? value : refuse(key, 'a boolean');
}

export function bytes(object: ProtoObject, key: string): Uint8Array {
  const value = field(object, key);
  return value instanceof Uint8Array ? value : refuse(key, 'bytes');
}

export function optionalMessage(object: ProtoObject, key: string): ProtoObject | undefined {
  const value = field(object, key);
  if (value === null || value === undefined) return undefined;
  return typeof value === 'object' ? (value as ProtoObject) : refuse(key, 'a message');
}

export function message(object: ProtoObject, key: string): ProtoObject {
  return optionalMessage(object, key) ?? refuse(key, 'a message');
}

export function list<T>(object: ProtoObject, key: string, map: (item: ProtoObject) => T): T[] {
  const value = field(object, key);
  if (!Array.isArray(value)) refuse(key, 'a list');
  return value.map((item: unknown) => (typeof item === 'object' && item !== null ? map(item as ProtoObject) : refuse(key, 'messages')));
}

export function strings(object: ProtoObject, key: string): string[] {
  const value = field(object, key);
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) refuse(key, 'a list of strings');
  return value as string[];
}

export function uints(object: ProtoObject, key: string): number[] {
  const value = field(object, key);
  if (!Array.isArray(value) || !value.every((item) => Number.isInteger(item) && item >= 0)) refuse(key, 'a list of unsigned integers');
  return value as number[];
}

/** An enum field read by its proto name (`names` maps each TypeScript value to it). */
export function enumOf<T extends string>(object: ProtoObject, key: string, names: Readonly<Record<T, string>>): T {
  const value = field(object, key);
  for (const [ts, proto] of Object.entries(names) as Array<[T, string]>) {
    if (proto === value) return ts;
  }
  return refuse(key, `one of ${Object.values(names).join(', ')}`);
}

/** The body of a message with no fields (proto Empty, and requests that carry nothing). */
export const EMPTY_CODEC: BodyCodec<Record<string, never>> = { toProto: () => ({}), fromProto: () => ({}) };
