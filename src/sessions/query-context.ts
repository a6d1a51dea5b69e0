// What a tenant's queries are checked and compiled against, read from the definitions every
// node holds: its streams (schema and repository), its contributor types and instances
// (for `contributor.user.name`), its domains; and the compile options of one query: its
// variables, the session's functions (sandboxed), following contributor
// fields, and the domain's filter of input payloads.

import type { DomainScope } from '../search/search-service.js';
import { pathReader } from '../lib/json.js';
import { propertyOf } from '../query/types.js';
import {
  variableValue,
  type RecordValueType,
  type SessionVariable,
  type StreamInfo,
} from '../query/index.js';
import type { CompileOptions, FieldAccessor, FunctionDefinition, Value } from '../expression/index.js';
import type { SandboxedFunction } from '../scripting/sandbox.js';
import type { FunctionBudget } from './function-budget.js';
import type { Definitions } from '../storage/definition-store.js';
import { parseSchema, type StreamSchema } from '../streams/schema.js';
import type { RepositoryMapping } from '../streams/repository-mapping.js';
import type { StreamId } from '../streams/stream-id.js';
import type { SessionWorld } from './session-analysis.js';

export interface TenantWorld extends SessionWorld {
  /** Parsed schemas of the tenant's streams by URI. */
  schemaOf(uri: string): StreamSchema | undefined;
  contributorInstance(type: string, id: string): Record<string, unknown> | undefined;
}

/**
 * The kinds of definition a change of which makes a tenant's world a new one (a key is
 * `kind/tenant/…`): those it holds parsed, and domains, which it reads live but on whose
 * existence a session's analysis depends. Contributor instances are read live and no
 * analysis depends on them: writing one keeps the world.
 */
const WORLD_KINDS = new Set(['stream', 'repository', 'contributor-type', 'domain']);

/** Per definitions, the worlds built since their tenant's last change of a WORLD_KINDS key. */
const builtWorlds = new WeakMap<Definitions, Map<string, TenantWorld>>();

/**
 * The tenant's world as the definitions hold it now. Building one parses every stream
 * schema of the tenant, and a session's change and its run asked for it several times,
 * so a world is kept until a definition it is made of changes: the same object
 * then stands for the same world (analysedSession keys on it). Nobody changes it in place.
 */
export function tenantWorld(definitions: Definitions, tenant: string): TenantWorld {
  let built = builtWorlds.get(definitions);
  if (built === undefined) {
    const worlds = new Map<string, TenantWorld>();
    definitions.onChange((key) => {
      const [kind, owner] = key.split('/', 2);
      if (owner !== undefined && WORLD_KINDS.has(kind!)) worlds.delete(owner);
    });
    builtWorlds.set(definitions, (built = worlds));
  }
  let world = built.get(tenant);
  if (world === undefined) built.set(tenant, (world = buildTenantWorld(definitions, tenant)));
  return world;
}

function buildTenantWorld(definitions: Definitions, tenant: string): TenantWorld {
  const streams = new Map<string, StreamInfo>();
  const schemas = new Map<string, StreamSchema>();
  for (const stream of definitions.list<{ schema: unknown }>(`stream/${tenant}/`)) {
    const key = stream.key.slice('stream/'.length);
    const repository = definitions.get<RepositoryMapping>(`repository/${key}`)?.value.name;
    try {
      const schema = parseSchema(stream.value.schema);
      schemas.set(`/streams/${key}`, schema);
      streams.set(`/streams/${key}`, repository === undefined ? { schema } : { schema, repository });
    } catch {
      // A stored schema was valid when it was stored; one that no longer parses is left out.
    }
  }
  const contributorTypes = new Map<string, unknown>();
  for (const type of definitions.list<{ schema: unknown }>(`contributor-type/${tenant}/`)) {
    contributorTypes.set(type.key.slice(`contributor-type/${tenant}/`.length), type.value.schema);
  }
  return {
    streams,
    contributorTypes,
    domainExists: (uri) => uri.startsWith(`/domain/${tenant}/`) && definitions.get(`domain/${uri.slice('/domain/'.length)}`) !== undefined,
    schemaOf: (uri) => schemas.get(uri),
    contributorInstance: (type, id) => definitions.get<Record<string, unknown>>(`contributor/${tenant}/${type}/${id}`)?.value,
  };
}

export interface QueryCompileParts {
  readonly world: TenantWorld;
  /** The rows the query's first stage reads, when it reads a physical stream. */
  readonly sourceRow: RecordValueType | undefined;
  readonly sessionVariables: readonly SessionVariable[];
  readonly queryVariables: readonly SessionVariable[];
  readonly functions: ReadonlyMap<string, SandboxedFunction>;
  readonly clock: () => number;
  /** Charged with every call of a session function; none: calls are not paced. */
  readonly functionBudget?: FunctionBudget;
}

export function compileOptionsOf(parts: QueryCompileParts): CompileOptions {
  const variables = new Map<string, Value | undefined>();
  for (const variable of [...parts.sessionVariables, ...parts.queryVariables]) variables.set(variable.id, variableValue(variable));
  return {
    variable: (name) => variables.get(name),
    clock: parts.clock,
    functions: sessionFunctions(parts.functions, parts.functionBudget),
    resolveField: (path) => (parts.sourceRow === undefined ? undefined : contributorAccessor(parts.sourceRow, path, parts.world)),
  };
}

/**
 * Session functions as expression functions: each call runs in the sandbox, within its time
 * limit, and is charged to the query's budget.
 */
function sessionFunctions(functions: ReadonlyMap<string, SandboxedFunction>, budget: FunctionBudget | undefined): Record<string, FunctionDefinition> {
  const definitions: Record<string, FunctionDefinition> = {};
  for (const [id, fn] of functions) {
    const call = (args: unknown[]) => (budget === undefined ? fn.callSync(args) : budget.charge(() => fn.callSync(args)));
    definitions[id] = {
      minArgs: 0,
      maxArgs: 32,
      compile: (args) => (row) => toValue(call(args.map((arg) => arg.evaluate(row)))),
    };
  }
  return definitions;
}

function toValue(result: unknown): Value {
  return result === undefined ? null : (result as Value);
}

/**
 * A path that crosses a contributor field of a known type reads on in the instance it
 * names: `contributor.user.name` is `user.name` of the contributor whose id the row holds.
 * Undefined for any other path (the default reader serves it).
 */
function contributorAccessor(row: RecordValueType, path: readonly string[], world: TenantWorld): FieldAccessor | undefined {
  let current: RecordValueType = row;
  for (let index = 0; index < path.length - 1; index += 1) {
    const type = propertyOf(current, path[index]!);
    if (type === undefined) return undefined;
    if (type.kind === 'contributor') {
      const definition = type.definition;
      if (definition === undefined) return undefined;
      const readId = pathReader(path.slice(0, index + 1).join('.'));
      const readRest = pathReader(path.slice(index + 1).join('.'));
      return (input) => {
        const id = readId(input as Record<string, unknown>);
        const instance = typeof id === 'string' ? world.contributorInstance(definition, id) : undefined;
        return instance === undefined ? null : readRest(instance);
      };
    }
    if (type.kind !== 'record') return undefined;
    current = type;
  }
  return undefined;
}

/** The domain's test of a payload: a contributor field holds a contributor of the domain. */
export function domainFilter(scope: DomainScope, stream: StreamId, schema: StreamSchema): (payload: Record<string, unknown>) => boolean {
  const fields = scope
    .fieldsOf(stream, schema)
    .map((field) => ({ read: pathReader(field.path), ids: field.ids.flatMap((name) => scope.idSet(name)) }))
    .filter((field) => field.ids.length > 0)
    .map((field) => ({ read: field.read, ids: new Set(field.ids) }));
  if (fields.length === 0) return () => false;
  return (payload) =>
    fields.some(({ read, ids }) => {
      const value = read(payload);
      return typeof value === 'string' && ids.has(value);
    });
}

