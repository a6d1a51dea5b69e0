// The interface both stream repositories implement. A record is what the cluster stores,
// replicates, hints, transfers and repairs as one unit: in ssr one payload, in tsr a block of
// payloads (tsr-block.ts). Its key is assigned once by the node that received the write, so
// every replica stores it under the same key and a replayed write or a transfer of the same
// record is idempotent. Scans read payloads, whatever the records that hold them.

import { assert } from '../lib/assert.js';
import type { BatchOperation } from './database.js';

export type RepositoryName = 'ssr' | 'tsr';
export const REPOSITORY_NAMES: readonly RepositoryName[] = ['ssr', 'tsr'];

export function isRepositoryName(value: string): value is RepositoryName {
  return value === 'ssr' || value === 'tsr';
}

export interface StoredRecord {
  /** "tenant/collection/name" */
  stream: string;
  partition: number;
  /**
   * Event time in epoch milliseconds (the primary timestamp field, else time of receipt):
   * in ssr the payload's, in tsr its block's earliest.
   */
  timestamp: number;
  /** Unique per record across the cluster (writeIds.ts). */
  writeId: string;
  /** ssr: the payload as canonical JSON text. tsr: the text of a block of payloads (tsr-block.ts). */
  value: string;
}

/** One stored payload, as a scan reads it. */
export interface StoredPayload {
  stream: string;
  partition: number;
  /** Event time in epoch milliseconds. */
  timestamp: number;
  /** Unique per payload: its record's writeId (in tsr, with the payload's place in its block). */
  writeId: string;
  payload: Record<string, unknown>;
}

export interface ScanOptions {
  partition?: number;
  /** Inclusive bounds, epoch milliseconds. */
  fromTimestamp?: number;
  toTimestamp?: number;
  limit?: number;
  /** Resume after this payload (a page boundary); only with `partition`. */
  after?: { timestamp: number; writeId: string };
}

export interface Repository {
  readonly name: RepositoryName;
  /** Operations that store the records; the caller commits them in one synced batch. */
  writeOperations(records: readonly StoredRecord[]): BatchOperation[];
  /** Payloads in each partition's order (tsr: event time, then writeId), partition after partition. */
  scan(stream: string, options?: ScanOptions): AsyncIterable<StoredPayload>;
  /** Payloads per partition of the stream. */
  countByPartition(stream: string): Promise<Map<number, number>>;
  hasData(stream: string): Promise<boolean>;
  /**
   * The record keys of one partition, each without its "stream/partition/" prefix, in key
   * order: what replicas compare in anti-entropy repair (src/repair/).
   */
  partitionKeys(stream: string, partition: number): Promise<string[]>;
  /** The records stored under these keys of one partition (keys not held are skipped). */
  recordsAt(stream: string, partition: number, keys: readonly string[]): Promise<StoredRecord[]>;
  /** The partitions of the stream that hold records here, ascending. */
  partitionsHeld(stream: string): Promise<number[]>;
  /** Up to `limit` records of one partition after the key `after` (without the prefix), in key order, each with its key. */
  recordPage(stream: string, partition: number, after: string | undefined, limit: number): Promise<Array<{ key: string; record: StoredRecord }>>;
  /** Operations that delete these keys (without the prefix) of one partition; the caller commits them. */
  deleteOperations(stream: string, partition: number, keys: readonly string[]): BatchOperation[];
}

export const PARTITION_DIGITS = 4;
// Timestamps are offset so that dates before 1970 still sort as unsigned hex.
const TIMESTAMP_OFFSET = 2 ** 52;
const TIMESTAMP_DIGITS = 14;

export function encodePartition(partition: number): string {
  return partition.toString(16).padStart(PARTITION_DIGITS, '0');
}

/** Two hex digits of each byte value. */
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const TWO_TO_32 = 2 ** 32;
/** Offset timestamps below this fill TIMESTAMP_DIGITS hex digits (7 bytes). */
const HEX_BYTES_LIMIT = 2 ** 56;

/**
 * The timestamp's key part: 14 hex digits of it plus the offset. Written a byte at a time:
 * Number#toString(16) took ~340 ns a call, and each tsr block's key holds two (a replicated
 * write makes each key on every owner, and again for its receipt).
 */
export function encodeTimestamp(timestamp: number): string {
  const offset = Math.trunc(timestamp) + TIMESTAMP_OFFSET;
  if (!(offset >= 0 && offset < HEX_BYTES_LIMIT)) return offset.toString(16).padStart(TIMESTAMP_DIGITS, '0');
  const high = Math.floor(offset / TWO_TO_32);
  const low = offset - high * TWO_TO_32;
  const hex = HEX_BYTES[high >>> 16]! + HEX_BYTES[(high >>> 8) & 0xff]! + HEX_BYTES[high & 0xff]!
    + HEX_BYTES[low >>> 24]! + HEX_BYTES[(low >>> 16) & 0xff]! + HEX_BYTES[(low >>> 8) & 0xff]! + HEX_BYTES[low & 0xff]!;
  assert(hex.length === TIMESTAMP_DIGITS, () => `timestamp ${timestamp} written as ${hex}`);
  return hex;
}

export function decodeTimestamp(hex: string): number {
  return parseInt(hex, 16) - TIMESTAMP_OFFSET;
}
