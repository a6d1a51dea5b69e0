// Runs tenant scripts (tag functions, query-session functions) in a separate V8 isolate
// (isolated-vm; docs/platform-interface.md, "Tags"): no process, modules, files, network or
// timers, a time limit per call and a memory limit per script. Each compiled function owns one
// isolate, so tenants cannot see each other's globals and a memory blow-up only takes that
// script down.
//
// isolated-vm only enforces the time limit while tenant code runs inside an apply/run. When
// a call throws, or returns an object, isolated-vm reads the thrown error's properties and
// serialises the result on the isolate's thread with no time limit, and a tenant getter there
// (`throw { get message() { for (;;); } }`, `return { get x() { for (;;); } }`) hangs that
// thread for good (measured). So tenant code is only ever entered through the bootstrap below,
// which catches everything, describes errors and encodes results as JSON inside the limit,
// and hands isolated-vm nothing but a string.

import ivm from 'isolated-vm';
import { TributaryError, type ErrorOptions } from '../lib/errors.js';
import { stringifyJson } from '../lib/json.js';

export interface SandboxLimits {
  timeoutMs: number;
  memoryMb: number;
}

/** A script failed: it does not compile, has no such function, threw, ran out of time or memory, or returned something that cannot be copied. */
export class ScriptError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(400, 'SCRIPT_ERROR', message, options);
  }
}

export interface SandboxedFunction {
  /** Calls the function with JSON-like args copied in and its result copied out as JSON. */
  call(args: unknown[]): Promise<unknown>;
  /**
   * The same call, blocking the event loop for at most the time limit: for callers that
   * must answer synchronously (a session function inside a query expression). Throws
   * ScriptError when the isolate is being rebuilt after a memory kill: call() rebuilds it.
   */
  callSync(args: unknown[]): unknown;
  /** Frees the isolate; idempotent. */
  dispose(): void;
}

export const sourceBytesMax = 64 * 1024;
/** A result is JSON-encoded inside the isolate; a larger one is refused before it is copied out. */
export const resultCharsMax = 8 * 1024 * 1024;
/** Error messages reach clients; a script must not be able to make them arbitrarily long. */
const messageCharsMax = 1000;
/** isolated-vm refuses smaller limits. */
const memoryMbMin = 8;

/**
 * Evaluated in each fresh context before any tenant code, so the intrinsics it captures are
 * the originals. It returns a dispatcher the host holds as a Reference; nothing in the context
 * points to it, and strict mode hides its frames from CallSite.getFunction. Every path returns
 * a string whose first character says what happened: V (value, JSON follows; nothing for
 * undefined), E (threw, description follows), M (no such function), A (returned a promise),
 * T (returned a function/symbol/bigint somewhere, type follows), U (result could not be
 * encoded, description follows), L (result too large). Any code that can run tenant hooks
 * (getters, toString, toJSON) sits inside a try whose catch only builds strings from
 * primitives, so nothing a tenant throws ever reaches isolated-vm.
 */
const bootstrapSource = `(function () {
  'use strict';
  const indirectEval = eval;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const apply = Reflect.apply;
  const slice = String.prototype.slice;
  const toText = String;
  const undescribable = 'a value that could not be described';
  // WebAssembly memory is not counted against the isolate's memory limit (measured: a script
  // grew the process by 250 MB), so tenant code does not get WebAssembly at all.
  delete globalThis.WebAssembly;
  let target;

  function truncate(text) {
    return text.length > ${messageCharsMax} ? apply(slice, text, [0, ${messageCharsMax}]) + '...' : text;
  }
  function describe(thrown) {
    try {
      if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function')) {
        const name = thrown.name;
        const message = thrown.message;
        if (typeof message === 'string') {
          return truncate(typeof name === 'string' && name !== '' ? name + ': ' + message : message);
        }
      }
      return truncate(toText(thrown));
    } catch {
      return undescribable;
    }
  }
  function load(source, functionName) {
    try {
      // Indirect eval runs the source as global code; the lookup is appended so that
      // let/const/class declarations (scoped to this eval) are found too.
      const found = indirectEval(source + '\\n;typeof ' + functionName + " === 'function' ? " + functionName + ' : undefined');
      if (typeof found !== 'function') return 'M';
      target = found;
      return 'V';
    } catch (thrown) {
      return 'E' + describe(thrown);
    }
  }
  function call(argsJson) {
    let value;
    try {
      value = apply(target, undefined, parse(argsJson));
    } catch (thrown) {
      return 'E' + describe(thrown);
    }
    try {
      if (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function') return 'A';
      let uncopyable = '';
      const json = stringify(value, function (key, item) {
        const type = typeof item;
        if (type !== 'function' && type !== 'symbol' && type !== 'bigint') return item;
        if (uncopyable === '') uncopyable = type;
        return undefined;
      });
      if (uncopyable !== '') return 'T' + uncopyable;
      if (json === undefined) return 'V';
      return json.length > ${resultCharsMax} ? 'L' : 'V' + json;
    } catch (thrown) {
      return 'U' + describe(thrown);
    }
  }
  return function (operation, text, functionName) {
    return operation === 'load' ? load(text, functionName) : call(text);
  };
})()`;

/** What lives in one isolate; dropped (never touched again) once the isolate is disposed. */
interface Loaded {
  isolate: ivm.Isolate;
  /** Held so the context lives as long as the dispatcher, whatever isolated-vm counts as a use. */
  context: ivm.Context;
  dispatch: ivm.Reference<(operation: string, text: string, functionName?: string) => string>;
}

interface Definition {
  source: string;
  functionName: string;
  label: string;
  limits: SandboxLimits;
}

/**
 * Compiles `source`, runs its top level once under the time limit and returns a handle to
 * the global function `functionName`. Throws ScriptError when the source is too large, does
 * not compile, throws or runs out of time or memory at its top level, or defines no such
 * function. `label` names the script in messages, e.g. "tag 'words'".
 */
export async function compileFunction(
  source: string,
  functionName: string,
  label: string,
  limits: SandboxLimits,
): Promise<SandboxedFunction> {
  assertLimits(limits);
  if (!/^[A-Za-z_$][\w$]*$/.test(functionName)) throw new Error(`not an identifier: ${functionName}`);
  const sourceBytes = Buffer.byteLength(source, 'utf8');
  if (sourceBytes > sourceBytesMax) {
    throw new ScriptError(`${label} is ${sourceBytes} bytes; at most ${sourceBytesMax} are allowed`);
  }
  const definition = { source, functionName, label, limits };
  return new IsolateFunction(definition, await load(definition));
}

function assertLimits(limits: SandboxLimits): void {
  if (!(Number.isFinite(limits.timeoutMs) && limits.timeoutMs > 0)) {
    throw new Error(`sandbox timeoutMs must be a positive number, got ${limits.timeoutMs}`);
  }
  if (!(Number.isInteger(limits.memoryMb) && limits.memoryMb >= memoryMbMin)) {
    throw new Error(`sandbox memoryMb must be an integer >= ${memoryMbMin}, got ${limits.memoryMb}`);
  }
}

/** Builds a fresh isolate holding the definition; disposes it again if any step fails. */
async function load(definition: Definition): Promise<Loaded> {
  const { source, functionName, label, limits } = definition;
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb, onCatastrophicError });
  try {
    // Compiling first, in the pristine isolate, gives syntax errors with a line and column;
    // the bootstrap's eval compiles the source again (once per definition, so cheap enough).
    await checkSyntax(isolate, source, label);
    const context = await isolate.createContext();
    const bootstrap = await isolate.compileScript(bootstrapSource);
    const dispatch = (await bootstrap.run(context, {
      reference: true,
      timeout: limits.timeoutMs,
    })) as Loaded['dispatch'];
    bootstrap.release();
    const loaded = { isolate, context, dispatch };
    decode(await enter(loaded, definition, ['load', source, functionName]), definition, 'at its top level');
    return loaded;
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * load() on the calling thread, for a session function unloaded by the pool (below) and
 * called again from inside a query expression, which must answer synchronously. The source
 * compiled once already, so syntax errors are not expected here.
 */
function loadSync(definition: Definition): Loaded {
  const { source, functionName, limits } = definition;
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb, onCatastrophicError });
  try {
    const context = isolate.createContextSync();
    const bootstrap = isolate.compileScriptSync(bootstrapSource);
    const dispatch = bootstrap.runSync(context, { reference: true, timeout: limits.timeoutMs }) as Loaded['dispatch'];
    bootstrap.release();
    const loaded = { isolate, context, dispatch };
    decode(enterSync(loaded, definition, ['load', source, functionName]), definition, 'at its top level');
    return loaded;
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

async function checkSyntax(isolate: ivm.Isolate, source: string, label: string): Promise<void> {
  try {
    (await isolate.compileScript(source, { filename: 'script' })).release();
  } catch (error) {
    // isolated-vm appends the position as " [script:2:13]".
    const message = errorMessage(error).replace(/ \[script:(\d+):(\d+)\]$/, ' (line $1, column $2)');
    const name = error instanceof Error ? error.name : 'Error';
    throw new ScriptError(`${label} does not compile: ${name}: ${message}`, { cause: error });
  }
}

/** Runs the dispatcher under the time limit and turns isolate-level failures into ScriptErrors. */
async function enter(
  loaded: Loaded,
  definition: Definition,
  args: [operation: string, text: string, functionName?: string],
): Promise<string> {
  const { label, limits } = definition;
  try {
    // The async apply runs on isolated-vm's own thread, so the event loop keeps serving
    // requests while a script runs.
    const reply: unknown = await loaded.dispatch.apply(undefined, args, {
      timeout: limits.timeoutMs,
      arguments: { copy: true },
      result: { copy: true },
    });
    if (typeof reply !== 'string') throw new Error(`sandbox dispatcher returned ${typeof reply}`);
    return reply;
  } catch (error) {
    if (loaded.isolate.isDisposed) {
      // Either the memory limit or a dispose() while the call ran; IsolateFunction tells them apart.
      throw new ScriptError(`${label} exceeded its memory limit of ${limits.memoryMb} MiB`, { cause: error });
    }
    if (/timed out/i.test(errorMessage(error))) {
      throw new ScriptError(`${label} exceeded its time limit of ${limits.timeoutMs} ms`, { cause: error });
    }
    throw error;
  }
}

/** enter() on the calling thread: the event loop waits for at most the time limit. */
function enterSync(loaded: Loaded, definition: Definition, args: [operation: string, text: string, functionName?: string]): string {
  const { label, limits } = definition;
  try {
    const reply: unknown = loaded.dispatch.applySync(undefined, args, {
      timeout: limits.timeoutMs,
      arguments: { copy: true },
      result: { copy: true },
    });
    if (typeof reply !== 'string') throw new Error(`sandbox dispatcher returned ${typeof reply}`);
    return reply;
  } catch (error) {
    if (loaded.isolate.isDisposed) {
      throw new ScriptError(`${label} exceeded its memory limit of ${limits.memoryMb} MiB`, { cause: error });
    }
    if (/timed out/i.test(errorMessage(error))) {
      throw new ScriptError(`${label} exceeded its time limit of ${limits.timeoutMs} ms`, { cause: error });
    }
    throw error;
  }
}

/** Turns a dispatcher reply into the value, or the ScriptError it stands for. */
function decode(reply: string, definition: Definition, where: string): unknown {
  const { label, functionName } = definition;
  const rest = reply.slice(1);
  switch (reply[0]) {
    case 'V':
      return rest === '' ? undefined : JSON.parse(rest);
    case 'E':
      return fail(`${label} threw${where === '' ? '' : ` ${where}`}: ${rest}`);
    case 'M':
      return fail(`${label} does not define a function named '${functionName}'`);
    case 'A':
      return fail(`${label} returned a promise; it must return its result synchronously`);
    case 'T':
      return fail(`${label} returned a ${rest}, which cannot be copied out of the sandbox`);
    case 'U':
      return fail(`${label} returned a value that cannot be copied out of the sandbox: ${rest}`);
    case 'L':
      return fail(`${label} returned more than ${resultCharsMax} characters of JSON`);
    default:
      throw new Error(`sandbox dispatcher replied ${JSON.stringify(reply.slice(0, 20))}`);
  }
}

function fail(message: string): never {
  throw new ScriptError(message);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** isolated-vm's README: after this, v8 has lost control of an isolate and the process must end. */
function onCatastrophicError(message: string): void {
  process.stderr.write(`isolated-vm catastrophic error, aborting: ${message}\n`);
  process.abort();
}

export interface IsolatePoolLimits {
  /** Isolates kept loaded at once. */
  isolatesMax: number;
  /** Heap (used and external) all loaded isolates may hold together. */
  memoryBytesMax: number;
}

/** Calls between two measurements of an isolate's heap. */
const MEASURE_EVERY_CALLS = 64;

/**
 * The loaded isolates of every compiled function, least recently used first. They are bounded:
 * without a bound, 40 streams × 32 tags kept 1,280 isolates and 1.35 GB. Beyond the count or
 * the total heap, the least recently used idle ones are unloaded; an unloaded function loads
 * again from its source on its next call (a few milliseconds), so eviction costs time, never a
 * result. Each isolate is charged its heap as measured after loading and every
 * MEASURE_EVERY_CALLS calls.
 */
export class IsolatePool {
  private readonly loaded = new Map<IsolateFunction, number>();

  constructor(private limits: IsolatePoolLimits) {}

  configure(limits: IsolatePoolLimits): void {
    this.limits = limits;
    this.evict(undefined);
  }

  get size(): number {
    return this.loaded.size;
  }

  get heapBytes(): number {
    let total = 0;
    for (const bytes of this.loaded.values()) total += bytes;
    return total;
  }

  /** `fn` was just used (and holds `bytes`, when measured): it becomes the most recent. */
  touch(fn: IsolateFunction, bytes?: number): void {
    const known = this.loaded.get(fn);
    this.loaded.delete(fn);
    this.loaded.set(fn, bytes ?? known ?? 0);
    this.evict(fn);
  }

  forget(fn: IsolateFunction): void {
    this.loaded.delete(fn);
  }

  private evict(keep: IsolateFunction | undefined): void {
    let total = this.heapBytes;
    for (const [fn, bytes] of this.loaded) {
      if (this.loaded.size <= this.limits.isolatesMax && total <= this.limits.memoryBytesMax) return;
      if (fn === keep || fn.busy) continue;
      fn.unload();
      this.loaded.delete(fn);
      total -= bytes;
    }
  }
}

/** Every compiled function's isolate is in this pool; node.ts sets its limits from the config. */
export const isolatePool = new IsolatePool({ isolatesMax: 256, memoryBytesMax: 1024 * 1024 * 1024 });

function heapBytesOf(loaded: Loaded): number {
  try {
    const statistics = loaded.isolate.getHeapStatisticsSync();
    return statistics.used_heap_size + statistics.externally_allocated_size;
  } catch {
    return 0;
  }
}

class IsolateFunction implements SandboxedFunction {
  private current: Loaded | undefined;
  private loading: Promise<Loaded> | undefined;
  private disposed = false;
  /** Unloaded by the pool (not by a memory kill): the next call loads it again, even a sync one. */
  private unloaded = false;
  private inFlight = 0;
  private calls = 0;

  constructor(
    private readonly definition: Definition,
    loaded: Loaded,
  ) {
    this.current = loaded;
    isolatePool.touch(this, heapBytesOf(loaded));
  }

  /** Whether a call is running in the isolate now (the pool never unloads it then). */
  get busy(): boolean {
    return this.inFlight > 0 || this.loading !== undefined;
  }

  async call(args: unknown[]): Promise<unknown> {
    const argsJson = stringifyJson(args);
    this.inFlight += 1;
    let reply: string;
    let loaded: Loaded | undefined;
    try {
      loaded = await this.instance();
      reply = await enter(loaded, this.definition, ['call', argsJson]);
    } catch (error) {
      throw loaded === undefined ? error : this.afterFailure(loaded, error);
    } finally {
      this.inFlight -= 1;
    }
    this.used(loaded);
    return decode(reply, this.definition, '');
  }

  callSync(args: unknown[]): unknown {
    if (!this.disposed && this.unloaded && this.current === undefined) this.reloadSync();
    const loaded = this.current;
    if (this.disposed || loaded === undefined || loaded.isolate.isDisposed) {
      if (!this.disposed) void this.instance().catch(() => undefined);
      throw new ScriptError(`${this.definition.label} is not loaded (it is being rebuilt after exceeding its memory limit)`);
    }
    let reply: string;
    this.inFlight += 1;
    try {
      reply = enterSync(loaded, this.definition, ['call', stringifyJson(args)]);
    } catch (error) {
      throw this.afterFailure(loaded, error);
    } finally {
      this.inFlight -= 1;
    }
    this.used(loaded);
    return decode(reply, this.definition, '');
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    isolatePool.forget(this);
    const loaded = this.current;
    this.current = undefined;
    if (loaded !== undefined && !loaded.isolate.isDisposed) loaded.isolate.dispose();
  }

  /** Frees the isolate but keeps the definition: the next call loads it again (the pool's eviction). */
  unload(): void {
    const loaded = this.current;
    if (this.disposed || loaded === undefined || this.busy) return;
    this.current = undefined;
    this.unloaded = true;
    if (!loaded.isolate.isDisposed) loaded.isolate.dispose();
  }

  private used(loaded: Loaded): void {
    this.calls += 1;
    isolatePool.touch(this, this.calls % MEASURE_EVERY_CALLS === 0 ? heapBytesOf(loaded) : undefined);
  }

  private reloadSync(): void {
    const loaded = loadSync(this.definition);
    this.current = loaded;
    this.unloaded = false;
    isolatePool.touch(this, heapBytesOf(loaded));
  }

  /** The live isolate; after a memory-limit disposal or an unload, a fresh one built from the source. */
  private async instance(): Promise<Loaded> {
    if (this.disposed) throw new Error(`${this.definition.label} was called after dispose()`);
    if (this.current !== undefined && !this.current.isolate.isDisposed) return this.current;
    this.current = undefined;
    this.loading ??= this.rebuild();
    return this.loading;
  }

  private async rebuild(): Promise<Loaded> {
    try {
      const loaded = await load(this.definition);
      if (this.disposed) {
        loaded.isolate.dispose();
        throw new ScriptError(`${this.definition.label} was removed while it was being reloaded`);
      }
      this.current = loaded;
      this.unloaded = false;
      isolatePool.touch(this, heapBytesOf(loaded));
      return loaded;
    } finally {
      this.loading = undefined;
    }
  }

  /** Forgets a disposed isolate (touching it again can crash the process) and names the cause. */
  private afterFailure(loaded: Loaded, error: unknown): unknown {
    if (!loaded.isolate.isDisposed) return error;
    if (this.current === loaded) this.current = undefined;
    if (this.disposed) {
      return new ScriptError(`${this.definition.label} was removed while it was running`, { cause: error });
    }
    return error;
  }
}
