// The aggregates of docs/query-language.md ("Expressions"): accumulators updated in place, one
// per aggregate call and group, and the rewriting of a select's items so that arithmetic
// over aggregates (`toDouble(count()) / 24.0`) is an ordinary expression over the group's
// aggregate values.
//
// Decisions the language leaves open:
// - Nulls are ignored by every aggregate but `count()`; `count(x)` counts rows where x is
//   not null. sum, avg, stddev and bivar also ignore values that are not numbers; min and
//   max ignore values that do not compare with the current one (another kind).
// - Over no values, sum, avg, min, max, first, last and stddev are null; count is 0.
// - `sum` of integers is an integer (a JS number, exact up to 2^53); `avg` is a double.
// - `stddev` is the sample standard deviation (divides by n - 1), null for fewer than two
//   values, computed with Welford's update so long streams keep their precision.
// - `first` and `last` follow arrival order, not event time, and skip nulls.
// - `bivar(x, y)` uses the rows where both are numbers: pearsonsR is the correlation,
//   slopeYX/interceptYX the least-squares line y = slopeYX * x + interceptYX, and
//   slopeXY/interceptXY the line x = slopeXY * y + interceptXY. It is null over no pairs;
//   a field is null where its divisor (a variance) is zero.
// - Identical aggregate calls in one select (`avg(x)` and `avg(x) * 2`) share one slot.

import { AGGREGATE_SIGNATURES, formatExpression } from '../query/index.js';
import { compareValues, type CallExpr, type Expr, type NumericKind, type Value } from '../expression/index.js';
import { aggregateReaderName } from './scopes.js';

export type AggregateName = 'count' | 'sum' | 'avg' | 'min' | 'max' | 'first' | 'last' | 'stddev' | 'bivar';

export interface Accumulator {
  /** One row's argument values; `second` is used by bivar only. */
  add(first: Value, second: Value): void;
  result(): Value;
  /** Back to no values, for recomputing a group after a retraction. */
  reset(): void;
  /**
   * Adds the values another accumulator of the same aggregate saw, as if they had been
   * added here (hopping windows combine panes).
   */
  merge(other: Accumulator): void;
}

/** Arrival order of values across every first/last accumulator, which merges compare. */
let arrivals = 0;

class CountRows implements Accumulator {
  private count = 0;
  static of(count: number): CountRows {
    const counted = new CountRows();
    counted.count = count;
    return counted;
  }
  add(): void {
    this.count++;
  }
  result(): Value {
    return this.count;
  }
  reset(): void {
    this.count = 0;
  }
  merge(other: CountRows): void {
    this.count += other.count;
  }
}

class CountValues implements Accumulator {
  private count = 0;
  static of(count: number): CountValues {
    const counted = new CountValues();
    counted.count = count;
    return counted;
  }
  add(value: Value): void {
    if (value !== null) this.count++;
  }
  result(): Value {
    return this.count;
  }
  reset(): void {
    this.count = 0;
  }
  merge(other: CountValues): void {
    this.count += other.count;
  }
}

class SumOrAverage implements Accumulator {
  private total = 0;
  private count = 0;
  constructor(private readonly average: boolean) {}
  static of(average: boolean, total: number, count: number): SumOrAverage {
    const summed = new SumOrAverage(average);
    summed.total = total;
    summed.count = count;
    return summed;
  }
  add(value: Value): void {
    // A long beyond 2^53 (BigInt) is summed as a double.
    const number = typeof value === 'bigint' ? Number(value) : value;
    if (typeof number !== 'number') return;
    this.total += number;
    this.count++;
  }
  result(): Value {
    if (this.count === 0) return null;
    return this.average ? this.total / this.count : this.total;
  }
  reset(): void {
    this.total = 0;
    this.count = 0;
  }
  merge(other: SumOrAverage): void {
    this.total += other.total;
    this.count += other.count;
  }
}

class Extreme implements Accumulator {
  private current: Value = null;
  /** 1 keeps the least value (min), -1 the greatest (max). */
  constructor(private readonly sign: 1 | -1) {}
  add(value: Value): void {
    if (value === null) return;
    if (this.current === null) {
      this.current = value;
      return;
    }
    const order = compareValues(value, this.current);
    if (order !== null && order * this.sign < 0) this.current = value;
  }
  result(): Value {
    return this.current;
  }
  reset(): void {
    this.current = null;
  }
  merge(other: Extreme): void {
    this.add(other.current);
  }
}

class FirstOrLast implements Accumulator {
  private current: Value = null;
  /** When the kept value arrived (see arrivals). */
  private arrival = 0;
  constructor(private readonly keepFirst: boolean) {}
  add(value: Value): void {
    if (value === null) return;
    arrivals++;
    if (!this.keepFirst || this.current === null) {
      this.current = value;
      this.arrival = arrivals;
    }
  }
  result(): Value {
    return this.current;
  }
  reset(): void {
    this.current = null;
  }
  merge(other: FirstOrLast): void {
    if (other.current === null) return;
    const takes = this.current === null || (this.keepFirst ? other.arrival < this.arrival : other.arrival > this.arrival);
    if (!takes) return;
    this.current = other.current;
    this.arrival = other.arrival;
  }
}

class SampleStandardDeviation implements Accumulator {
  private count = 0;
  private mean = 0;
  private squares = 0;
  static of(count: number, mean: number, squares: number): SampleStandardDeviation {
    const spread = new SampleStandardDeviation();
    spread.count = count;
    spread.mean = mean;
    spread.squares = squares;
    return spread;
  }
  add(value: Value): void {
    if (typeof value !== 'number') return;
    this.count++;
    const delta = value - this.mean;
    this.mean += delta / this.count;
    this.squares += delta * (value - this.mean);
  }
  result(): Value {
    return this.count < 2 ? null : Math.sqrt(Math.max(0, this.squares) / (this.count - 1));
  }
  reset(): void {
    this.count = 0;
    this.mean = 0;
    this.squares = 0;
  }
  /** Chan et al.'s combination of two Welford states. */
  merge(other: SampleStandardDeviation): void {
    if (other.count === 0) return;
    const count = this.count + other.count;
    const delta = other.mean - this.mean;
    this.squares += other.squares + (delta * delta * this.count * other.count) / count;
    this.mean += (delta * other.count) / count;
    this.count = count;
  }
}

class Bivariate implements Accumulator {
  private count = 0;
  private meanX = 0;
  private meanY = 0;
  /** Sums of squared deviations of x and y, and of their products (Welford's co-moment). */
  private squaresX = 0;
  private squaresY = 0;
  private products = 0;
  add(x: Value, y: Value): void {
    if (typeof x !== 'number' || typeof y !== 'number') return;
    this.count++;
    const deltaX = x - this.meanX;
    this.meanX += deltaX / this.count;
    const deltaY = y - this.meanY;
    this.meanY += deltaY / this.count;
    this.squaresX += deltaX * (x - this.meanX);
    this.squaresY += deltaY * (y - this.meanY);
    this.products += deltaX * (y - this.meanY);
  }
  result(): Value {
    if (this.count === 0) return null;
    const slopeYX = this.squaresX > 0 ? this.products / this.squaresX : null;
    const slopeXY = this.squaresY > 0 ? this.products / this.squaresY : null;
    const spread = Math.sqrt(this.squaresX * this.squaresY);
    return {
      pearsonsR: spread > 0 ? this.products / spread : null,
      slopeYX,
      interceptYX: slopeYX === null ? null : this.meanY - slopeYX * this.meanX,
      slopeXY,
      interceptXY: slopeXY === null ? null : this.meanX - slopeXY * this.meanY,
    };
  }
  reset(): void {
    this.count = 0;
    this.meanX = 0;
    this.meanY = 0;
    this.squaresX = 0;
    this.squaresY = 0;
    this.products = 0;
  }
  /** The pairwise combination of two co-moment states (as for stddev, in both variables). */
  merge(other: Bivariate): void {
    if (other.count === 0) return;
    const count = this.count + other.count;
    const deltaX = other.meanX - this.meanX;
    const deltaY = other.meanY - this.meanY;
    const weight = (this.count * other.count) / count;
    this.squaresX += other.squaresX + deltaX * deltaX * weight;
    this.squaresY += other.squaresY + deltaY * deltaY * weight;
    this.products += other.products + deltaX * deltaY * weight;
    this.meanX += (deltaX * other.count) / count;
    this.meanY += (deltaY * other.count) / count;
    this.count = count;
  }
}

/**
 * A summary of the numbers an aggregate's argument took, kept in a Float64Array by a
 * grouping that reads columns (grouping.ts, placeColumns): no accumulator call and no boxed
 * number per row. Per slot: count, sum, min, max, and Welford's mean and squared spread,
 * updated as the accumulators update them, so a summary of values in some order equals
 * the accumulator those values added in that order.
 */
export const NUMBER_SUMMARY_WIDTH = 6;

/** Aggregates of one argument that a number summary can stand for (and count() of rows: its count). */
export function summarizes(name: AggregateName, argCount: number): boolean {
  if (name === 'count') return argCount <= 1;
  return argCount === 1 && (name === 'sum' || name === 'avg' || name === 'min' || name === 'max' || name === 'stddev');
}

export function summarizeNumber(summary: Float64Array, at: number, value: number): void {
  const count = summary[at]! + 1;
  summary[at] = count;
  summary[at + 1]! += value;
  if (count === 1 || value < summary[at + 2]!) summary[at + 2] = value;
  if (count === 1 || value > summary[at + 3]!) summary[at + 3] = value;
  const delta = value - summary[at + 4]!;
  summary[at + 4]! += delta / count;
  summary[at + 5]! += delta * (value - summary[at + 4]!);
}

/** An accumulator of `name` holding the summary at `at` (summarizes holds), to merge into the slot's. */
export function summaryAccumulator(name: AggregateName, argCount: number, summary: Float64Array, at: number): Accumulator {
  const count = summary[at]!;
  switch (name) {
    case 'count':
      return argCount === 0 ? CountRows.of(count) : CountValues.of(count);
    case 'sum':
    case 'avg':
      return SumOrAverage.of(name === 'avg', summary[at + 1]!, count);
    case 'min':
    case 'max': {
      const extreme = new Extreme(name === 'min' ? 1 : -1);
      if (count > 0) extreme.add(summary[at + (name === 'min' ? 2 : 3)]!);
      return extreme;
    }
    case 'stddev':
      return SampleStandardDeviation.of(count, summary[at + 4]!, summary[at + 5]!);
    default:
      throw new Error(`no number summary for ${name}`);
  }
}

/** A fresh accumulator for an aggregate called with `argCount` arguments. */
export function createAccumulator(name: AggregateName, argCount: number): Accumulator {
  switch (name) {
    case 'count':
      return argCount === 0 ? new CountRows() : new CountValues();
    case 'sum':
      return new SumOrAverage(false);
    case 'avg':
      return new SumOrAverage(true);
    case 'min':
      return new Extreme(1);
    case 'max':
      return new Extreme(-1);
    case 'first':
      return new FirstOrLast(true);
    case 'last':
      return new FirstOrLast(false);
    case 'stddev':
      return new SampleStandardDeviation();
    case 'bivar':
      return new Bivariate();
  }
}

/** The numeric kind of an aggregate's value, from its first argument's: integer sums stay integer. */
export function aggregateKind(name: AggregateName, argumentKind: NumericKind): NumericKind {
  switch (name) {
    case 'count':
      return 'int';
    case 'avg':
    case 'stddev':
      return 'double';
    case 'bivar':
      return 'unknown';
    default:
      return argumentKind;
  }
}

export interface AggregateCall {
  readonly name: AggregateName;
  readonly args: readonly Expr[];
}

/**
 * The items of a select with each aggregate call replaced by a call of its slot's reader
 * (a function of no arguments), and the calls by slot.
 */
export function extractAggregates(
  items: readonly Expr[],
  isSessionFunction: (name: string) => boolean,
): { items: Expr[]; calls: AggregateCall[] } {
  const calls: AggregateCall[] = [];
  const slots = new Map<string, number>();
  const rewrite = (expr: Expr): Expr => {
    switch (expr.kind) {
      case 'call': {
        const name = expr.name.toLowerCase();
        if (isSessionFunction(expr.name) || !AGGREGATE_SIGNATURES.has(name)) return { ...expr, args: expr.args.map(rewrite) };
        return { kind: 'call', name: aggregateReaderName(slotOf(expr, name)), args: [], position: expr.position };
      }
      case 'unary':
        return { ...expr, operand: rewrite(expr.operand) };
      case 'binary':
        return { ...expr, left: rewrite(expr.left), right: rewrite(expr.right) };
      case 'logical':
        return { ...expr, operands: expr.operands.map(rewrite) };
      default:
        return expr;
    }
  };
  const slotOf = (call: CallExpr, name: string): number => {
    const text = formatExpression({ ...call, name });
    let slot = slots.get(text);
    if (slot === undefined) {
      slot = calls.length;
      slots.set(text, slot);
      calls.push({ name: name as AggregateName, args: call.args });
    }
    return slot;
  };
  return { items: items.map(rewrite), calls };
}
