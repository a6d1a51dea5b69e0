import { describe, expect, it } from 'vitest';
import { builtinFunctions } from '../../src/expression/index.js';
import { parseSchema } from '../../src/streams/schema.js';
import {
  AGGREGATE_SIGNATURES,
  analyseQuery,
  BUILTIN_SIGNATURES,
  checkQuery,
  numericKindOfType,
  outputSchemaToJson,
  parseQuery,
  typeToJson,
  variableValue,
  type CheckContext,
  type LogicalStreamWriter,
  type QueryCheck,
  type QueryError,
  type StreamInfo,
} from '../../src/query/index.js';
import { LANGUAGE_EXAMPLES } from '../kit/query-examples.js';

const EXAMPLES = LANGUAGE_EXAMPLES;

const CPU = '/streams/demo/infrastructure/cpu';
const HAPPINESS = '/streams/demo/mobile/happiness';
const LOCATION = '/streams/demo/mobile/location';
const TEMPERATURE = '/streams/demo/iot_board/temperature';
const TWEETS = '/streams/demo/twitter/tweets';
const LOG1 = '/streams/demo/infrastructure/log1';
const CPU_COPY = '/streams/demo/infrastructure/cpu_copy';

// Fields are optional unless they say otherwise: these streams declare theirs required.
const record = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'record', properties, optional: false, ...extra });
const t = (type: string, extra: Record<string, unknown> = {}) => ({ type, optional: false, ...extra });
const contributor = t('contributor', { definition: 'mobile_user' });
const timestamp = t('datetime', { annotations: ['urn:itrs:default-timestamp'] });
const schema = (properties: Record<string, unknown>) => ({ version: '1.0', topDef: record(properties) });

/** The streams of the examples, as their definitions hold them (cpu already parsed). */
const STREAMS = new Map<string, StreamInfo>([
  [CPU, { schema: parseSchema(schema({ host: t('string'), user: t('double'), kernel: t('double'), timestamp })), repository: 'tsr' }],
  [HAPPINESS, { schema: schema({ contributor, happiness: t('double'), timestamp }), repository: 'tsr' }],
  [
    LOCATION,
    { schema: schema({ contributor, timestamp, position: record({ latitude: t('double'), longitude: t('double') }) }), repository: 'tsr' },
  ],
  [TEMPERATURE, { schema: schema({ contributor, timestamp: t('datetime'), temperature: t('double') }) }],
  [
    TWEETS,
    {
      schema: schema({
        tweet: record({ user: record({ followers_count: t('int'), name: t('string') }), lang: t('string'), source: t('string') }),
        created: t('datetime', { optional: true }),
      }),
      repository: 'ssr',
    },
  ],
  [LOG1, { schema: schema({ host: t('string'), msg: t('string') }) }],
  [CPU_COPY, { schema: schema({ host: t('string'), user: t('double', { optional: true }), note: t('string', { optional: true }) }) }],
]);

const CONTRIBUTOR_TYPES = new Map<string, unknown>([
  ['mobile_user', { schema: record({ contributor: t('contributor'), user: record({ name: t('string'), typeOfParticipant: t('string') }) }) }],
]);

const BASE: CheckContext = { streams: STREAMS, contributorTypes: CONTRIBUTOR_TYPES };

function check(text: string, context: Partial<CheckContext> = {}): QueryCheck {
  return checkQuery(parseQuery(text), { ...BASE, ...context });
}

/** The output record as `name: type` strings, `?` marking optional fields. */
function fieldsOf(result: QueryCheck): string[] {
  return result.output.schema.topDef.properties.map(([name, type]) => `${name}: ${type.kind}${type.optional ? '?' : ''}`);
}

function errorsOf(text: string, context: Partial<CheckContext> = {}): readonly QueryError[] {
  return check(text, context).errors;
}

function writer(queryId: string, result: QueryCheck): LogicalStreamWriter {
  return { queryId, schema: result.output.schema, isHistorical: result.output.isHistorical };
}

describe('query checker - the examples of docs/query-language.md', () => {
  it('checks the live cpu query: a select, then a where over its output', () => {
    const result = check(EXAMPLES.cpuLive);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['user: double', 'kernel: double']);
    expect(result.output).toMatchObject({ target: { kind: 'channel' }, outputType: 'UNBOUNDED', isHistorical: false });
    expect(result.output.schema.config.key).toEqual([]);
    expect(result.inputs).toEqual([{ kind: 'physical', uri: CPU }]);
    expect(result.dependencies).toEqual([]);
  });

  it('checks the historical cpu query against a session variable and depends on it', () => {
    const result = check(EXAMPLES.cpuHistorical, { variables: [{ id: 'limit', value: '90', type: 'double' }] });
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['host: string', 'user: double']);
    expect(result.output).toMatchObject({ outputType: 'BOUNDED', isHistorical: true });
    expect(result.dependencies).toEqual([{ type: 'variable', id: 'limit' }]);
  });

  it('groups by a path through a contributor, named by its last segment', () => {
    const result = check(EXAMPLES.happiness);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['typeOfParticipant: string', 'avgHappiness: double?', 'N: int']);
    expect(result.output.schema.config.key).toEqual(['typeOfParticipant']);
    expect(result.contributorTypes).toEqual(['mobile_user']);
    expect(outputSchemaToJson(result.output.schema)).toEqual({
      version: '1.0',
      config: { key: ['typeOfParticipant'] },
      topDef: {
        type: 'record',
        properties: {
          typeOfParticipant: { type: 'string' },
          avgHappiness: { type: 'double', optional: true },
          N: { type: 'int' },
        },
      },
    });
  });

  it('windows on the last key, whose value is the window start', () => {
    const result = check(EXAMPLES.location);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['contributor: contributor', 'timestamp: datetime', 'lat: double?', 'long: double?']);
    expect(result.output.schema.config.key).toEqual(['contributor', 'timestamp']);
    expect(result.output.outputType).toBe('BOUNDED');
    expect(typeToJson(result.output.schema.topDef.properties[0]?.[1] ?? { kind: 'unknown', optional: true, annotations: [] })).toEqual({
      type: 'contributor',
      definition: 'mobile_user',
    });
    const select = result.steps[0];
    expect(select?.kind === 'select' && select.grouping?.window?.hop?.ms).toBe(60_000);
  });

  it('checks a quoted source with a hopping window', () => {
    const result = check(EXAMPLES.temperature);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['contributor: contributor', 'timestamp: datetime', 'Temperature: double?']);
    expect(result.output.schema.config.key).toEqual(['contributor', 'timestamp']);
    expect(result.output.outputType).toBe('UNBOUNDED');
  });

  it('renames nested fields, groups by a renamed one and orders by an aggregate', () => {
    const result = check(EXAMPLES.tweets);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['app: string', 'C: int', 'F: double?']);
    expect(result.output.schema.config.key).toEqual(['app']);
    expect(result.steps.map((step) => step.kind)).toEqual(['select', 'select', 'order']);
    const first = result.steps[0];
    expect(first?.kind === 'select' && first.output.properties.map(([name, type]) => [name, numericKindOfType(type)])).toEqual([
      ['fol', 'int'],
      ['lang', 'unknown'],
      ['app', 'unknown'],
    ]);
  });

  it('orders and takes', () => {
    const result = check(EXAMPLES.happinessTake);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['timestamp: datetime', 'happiness: double']);
    expect(result.steps.map((step) => step.kind)).toEqual(['select', 'order', 'take']);
  });

  it('windows on the primary timestamp when there is no group by', () => {
    const result = check(EXAMPLES.cpuWindow);
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['count: int']);
    // The window start is a key only when the select passes it on.
    expect(result.output.schema.config.key).toEqual([]);
    const select = result.steps[0];
    expect(select?.kind === 'select' && select.grouping?.keys.map((key) => [key.name, key.expression])).toEqual([
      ['timestamp', { kind: 'field', path: ['timestamp'], position: { offset: 38, line: 1, column: 39 } }],
    ]);
    const withKey = check('from /streams/demo/infrastructure/cpu window of 1 hour select timestamp, count() as n');
    expect(withKey.errors).toEqual([]);
    expect(withKey.output.schema.config.key).toEqual(['timestamp']);
  });

  it('checks the two queries of one session: into x, then from x', () => {
    const first = check(EXAMPLES.logInto);
    expect(first.errors).toEqual([]);
    expect(first.output.target).toEqual({ kind: 'logical', name: 'x' });
    expect(fieldsOf(first)).toEqual(['host: string', 'msg: string']);
    const second = check(EXAMPLES.logFrom, { logicalStreams: new Map([['x', [writer('q1', first)]]]) });
    expect(second.errors).toEqual([]);
    expect(fieldsOf(second)).toEqual(['host: string', 'msg: string']);
    expect(second.inputs).toEqual([{ kind: 'logical', name: 'x', queryIds: ['q1'] }]);
    expect(second.dependencies).toEqual([{ type: 'query', id: 'q1' }]);
    expect(second.output).toMatchObject({ outputType: 'UNBOUNDED', target: { kind: 'channel' } });
  });

  it('analyses every example from text with no error', () => {
    const first = check(EXAMPLES.logInto);
    const context: CheckContext = {
      ...BASE,
      variables: [{ id: 'limit', value: '90', type: 'double' }],
      logicalStreams: new Map([['x', [writer('q1', first)]]]),
    };
    for (const text of Object.values(EXAMPLES)) expect(analyseQuery(text, context).errors).toEqual([]);
  });
});

describe('query checker - names of output fields', () => {
  it('names a path by its last segment, an aggregate by its function and anything with as', () => {
    const result = check(`from ${LOCATION} select position.longitude, position, toDouble(1) as one`);
    expect(fieldsOf(result)).toEqual(['longitude: double', 'position: record', 'one: double?']);
    const aggregates = check(`from ${CPU} select count(), AVG(user), sum(kernel), min(host), max(timestamp), first(user), last(host), stddev(user)`);
    expect(aggregates.errors).toEqual([]);
    expect(fieldsOf(aggregates)).toEqual([
      'count: int',
      'avg: double?',
      'sum: double?',
      'min: string?',
      'max: datetime?',
      'first: double?',
      'last: string?',
      'stddev: double?',
    ]);
  });

  it('passes a record-valued path whole', () => {
    const result = check(`from ${LOCATION} select position`);
    expect(typeToJson(result.output.schema.topDef)).toEqual({
      type: 'record',
      properties: { position: { type: 'record', properties: { latitude: { type: 'double' }, longitude: { type: 'double' } } } },
    });
  });

  it('reports UNNAMED_EXPRESSION for a computed item without a name, and for a second field of one name', () => {
    expect(errorsOf(`from ${CPU} select user + kernel, upper(host)`)).toEqual([
      { type: 'UNNAMED_EXPRESSION', expression: 'user + kernel' },
      { type: 'UNNAMED_EXPRESSION', expression: 'upper(host)' },
    ]);
    expect(errorsOf(`from ${CPU} select user, kernel as user`)).toEqual([{ type: 'UNNAMED_EXPRESSION', expression: 'kernel' }]);
    expect(errorsOf(`from ${CPU} group by host * 2 select count()`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'double', actual: 'string', expression: 'host' },
      { type: 'UNNAMED_EXPRESSION', expression: 'host * 2' },
    ]);
  });

  it('gives bivar a record of five doubles', () => {
    const result = check(`from ${CPU} group by host select host, bivar(user, kernel) as fit`);
    expect(result.errors).toEqual([]);
    expect(typeToJson(result.output.schema.topDef.properties[1]?.[1] ?? result.output.schema.topDef)).toEqual({
      type: 'record',
      optional: true,
      properties: {
        pearsonsR: { type: 'double', optional: true },
        slopeYX: { type: 'double', optional: true },
        interceptYX: { type: 'double', optional: true },
        slopeXY: { type: 'double', optional: true },
        interceptXY: { type: 'double', optional: true },
      },
    });
    expect(fieldsOf(check(`from ${CPU} select bivar(user, kernel) as fit select fit.slopeYX as s`))).toEqual(['s: double?']);
  });
});

describe('query checker - types of expressions', () => {
  it('keeps integer arithmetic integer and lets a double make a double', () => {
    const result = check(
      `from ${TWEETS} select tweet.user.followers_count as f group by f
       select f, count() / 24 as perHour, toDouble(count()) / 24.0 as exact, sum(f) as total, avg(f) + 1 as a, -f as minus, f % 7 as r`,
    );
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['f: int', 'perHour: int?', 'exact: double?', 'total: int?', 'a: double?', 'minus: int?', 'r: int?']);
  });

  it('types literals, strings, comparisons and functions', () => {
    const result = check(
      `from ${CPU} select 3 as i, 2.5 as d, 'x' as s, true as b, null as n, host + '!' as joined, user > 1 as gt,
       lower(host) as l, length(host) as len, round(user) as r, year(timestamp) as y, now() as t, ifNull(user, 0) as u`,
    );
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual([
      'i: int',
      'd: double',
      's: string',
      'b: boolean',
      'n: null?',
      'joined: string?',
      'gt: boolean?',
      'l: string?',
      'len: int?',
      'r: int?',
      'y: int?',
      't: datetime',
      'u: double',
    ]);
    expect(typeToJson(result.output.schema.topDef.properties[4]?.[1] ?? result.output.schema.topDef)).toEqual({ type: 'unknown', optional: true });
  });

  it('types a variable by its type and checks its value', () => {
    const variables = [
      { id: 'n', value: '7', type: 'int' },
      { id: 'name', value: 'web', type: 'string' },
      { id: 'bad', value: 'seven', type: 'int' },
    ];
    expect(fieldsOf(check(`from ${CPU} select @n * 2 as twice, @name as name`, { variables }))).toEqual(['twice: int?', 'name: string']);
    expect(errorsOf(`from ${CPU} where user > @bad`, { variables })).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'int', actual: 'string', expression: '@bad' },
    ]);
    expect(errorsOf(`from ${CPU} where host == @n`, { variables })).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'string', actual: 'int', expression: '@n' },
    ]);
    expect(variableValue({ id: 'a', value: '90', type: 'double' })).toBe(90);
    expect(variableValue({ id: 'a', value: 'true', type: 'boolean' })).toBe(true);
    expect(variableValue({ id: 'a', value: 'yes', type: 'boolean' })).toBeUndefined();
  });

  it("lets a query's own variable hide the session's, without a dependency on it", () => {
    const result = check(`from ${CPU} where user > @limit`, {
      variables: [{ id: 'limit', value: 'x', type: 'string' }],
      queryVariables: [{ id: 'limit', value: '5', type: 'int' }],
    });
    expect(result.errors).toEqual([]);
    expect(result.dependencies).toEqual([]);
  });

  it('leaves session functions untyped', () => {
    const result = check(`from ${CPU} where score(user, host) select score(user) as s`, { functions: ['score'] });
    expect(result.errors).toEqual([]);
    expect(fieldsOf(result)).toEqual(['s: unknown?']);
  });

  it('follows a contributor field into its type, and reports what is not there', () => {
    expect(errorsOf(`from ${HAPPINESS} where contributor.user.name == 'ann' select contributor.user`)).toEqual([]);
    expect(errorsOf(`from ${HAPPINESS} select contributor.user.age`)).toEqual([
      { type: 'INVALID_FIELD_REFERENCE', field: 'contributor.user.age' },
    ]);
    // A contributor type the tenant no longer has: nothing behind the field can be read.
    expect(errorsOf(`from ${HAPPINESS} select contributor.user.name`, { contributorTypes: new Map() })).toEqual([
      { type: 'INVALID_FIELD_REFERENCE', field: 'contributor.user.name' },
    ]);
  });

  it('reports each TYPE_MISMATCH with what was expected and what was found', () => {
    expect(errorsOf(`from ${CPU} where host > 3`)).toEqual([{ type: 'TYPE_MISMATCH', expected: 'string', actual: 'int', expression: '3' }]);
    expect(errorsOf(`from ${CPU} where user`)).toEqual([{ type: 'TYPE_MISMATCH', expected: 'boolean', actual: 'double', expression: 'user' }]);
    expect(errorsOf(`from ${CPU} where !(user + 1) && host`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'boolean', actual: 'double', expression: 'user + 1' },
      { type: 'TYPE_MISMATCH', expected: 'boolean', actual: 'string', expression: 'host' },
    ]);
    expect(errorsOf(`from ${CPU} select host - 1 as h, user + 'x' as u`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'double', actual: 'string', expression: 'host' },
      { type: 'TYPE_MISMATCH', expected: 'string', actual: 'double', expression: 'user' },
    ]);
    expect(errorsOf(`from ${CPU} select avg(host) as a`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'double', actual: 'string', expression: 'host' },
    ]);
    expect(errorsOf(`from ${LOCATION} where position == 1 && contains(position, 'a')`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'record', actual: 'int', expression: '1' },
      { type: 'TYPE_MISMATCH', expected: 'string', actual: 'record', expression: 'position' },
    ]);
    // Datetimes are ISO strings: comparing one with a string literal is fine.
    expect(errorsOf(`from ${CPU} where timestamp > '2024-01-01T00:00:00Z'`)).toEqual([]);
  });

  it('needs a datetime for the key a window is on', () => {
    expect(errorsOf(`from ${CPU} group by host window of 1 minute select host, count()`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'datetime', actual: 'string', expression: 'host' },
    ]);
    expect(errorsOf(`from ${LOG1} window of 1 minute select count()`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'datetime', actual: 'record', expression: 'window of 1 minute' },
    ]);
  });

  it('reports wrong argument counts and bad search patterns as syntax errors at the call', () => {
    expect(errorsOf(`from ${CPU} select lower(host, host) as l`)).toEqual([
      { type: 'SYNTAX_ERROR', line: 1, column: 46, message: 'lower() takes 1 argument but got 2' },
    ]);
    expect(errorsOf(`from historical ${TWEETS} where like(tweet.lang, host)`)[0]).toMatchObject({ type: 'INVALID_FIELD_REFERENCE' });
    expect(errorsOf(`from historical ${TWEETS} where like(tweet.lang, tweet.source)`)).toEqual([
      {
        type: 'SYNTAX_ERROR',
        line: 1,
        column: 69,
        message: 'like() expects a pattern as a constant string but found a field reference',
      },
    ]);
  });
});

describe('query checker - fields, aggregates and functions', () => {
  it('reports INVALID_FIELD_REFERENCE for a field the rows do not have', () => {
    const result = check(`from ${CPU} select host\n  where user > 1`);
    expect(result.errors).toEqual([{ type: 'INVALID_FIELD_REFERENCE', field: 'user' }]);
    expect(result.diagnostics[0]).toMatchObject({ line: 2, column: 9, message: "'user': no such field in the rows read here" });
    expect(errorsOf(`from ${CPU} select host.name`)).toEqual([{ type: 'INVALID_FIELD_REFERENCE', field: 'host.name' }]);
  });

  it('lets a grouped select read keys outside aggregates and input fields inside them', () => {
    expect(errorsOf(`from ${CPU} group by host select host, user, max(user) as m`)).toEqual([
      { type: 'INVALID_FIELD_REFERENCE', field: 'user' },
    ]);
    expect(errorsOf(`from ${CPU} select host, count()`)).toEqual([{ type: 'INVALID_FIELD_REFERENCE', field: 'host' }]);
    const byPath = check(`from ${TWEETS} group by tweet.lang select tweet.lang, upper(lang) as L, count()`);
    expect(byPath.errors).toEqual([]);
    expect(byPath.output.schema.config.key).toEqual(['lang']);
    expect(fieldsOf(byPath)).toEqual(['lang: string', 'L: string?', 'count: int']);
  });

  it('aggregates the whole input when a select has aggregates and no group by', () => {
    const result = check(`from ${CPU} select count() as n, avg(user) as mean`);
    expect(result.errors).toEqual([]);
    const select = result.steps[0];
    expect(select?.kind === 'select' && [select.aggregating, select.grouping]).toEqual([true, undefined]);
  });

  it('allows aggregates only in a select, and not inside each other', () => {
    expect(errorsOf(`from ${CPU} where count() > 1 order by max(user)`)).toEqual([
      { type: 'UNKNOWN_FUNCTION', name: 'count' },
      { type: 'UNKNOWN_FUNCTION', name: 'max' },
    ]);
    expect(errorsOf(`from ${CPU} group by count() as c select c`)).toEqual([{ type: 'UNKNOWN_FUNCTION', name: 'count' }]);
    expect(errorsOf(`from ${CPU} select avg(count()) as a`)).toEqual([{ type: 'UNKNOWN_FUNCTION', name: 'count' }]);
  });

  it('reports UNKNOWN_FUNCTION for a name no one defines', () => {
    const result = check(`from ${CPU} select frobnicate(host, nosuch) as f`);
    expect(result.errors).toEqual([
      { type: 'UNKNOWN_FUNCTION', name: 'frobnicate' },
      { type: 'INVALID_FIELD_REFERENCE', field: 'nosuch' },
    ]);
    expect(result.diagnostics[0]).toMatchObject({ line: 1, column: 46, message: "unknown function 'frobnicate'" });
  });

  it('offers the search functions only over a historical source stored in the ssr', () => {
    expect(errorsOf(`from historical ${TWEETS} where search('rust') && prefix(tweet.lang, 'e') && like(tweet.source, 'web*')`)).toEqual(
      [],
    );
    expect(errorsOf(`from ${TWEETS} where search('rust')`)).toEqual([{ type: 'UNKNOWN_FUNCTION', name: 'search' }]);
    expect(errorsOf(`from historical ${CPU} where prefix(host, 'web')`)).toEqual([{ type: 'UNKNOWN_FUNCTION', name: 'prefix' }]);
  });

  it('reports MISSING_VARIABLE with the type the place needs', () => {
    const result = check(EXAMPLES.cpuHistorical);
    expect(result.errors).toEqual([{ type: 'MISSING_VARIABLE', name: 'limit', expectedType: 'double' }]);
    expect(result.diagnostics[0]).toMatchObject({ line: 1, column: 63 });
    expect(errorsOf(`from ${CPU} where @flag && @a == host && year(@when) > 2000 select @v as v`)).toEqual([
      { type: 'MISSING_VARIABLE', name: 'flag', expectedType: 'boolean' },
      { type: 'MISSING_VARIABLE', name: 'a', expectedType: 'string' },
      { type: 'MISSING_VARIABLE', name: 'when', expectedType: 'datetime' },
      { type: 'MISSING_VARIABLE', name: 'v', expectedType: 'unknown' },
    ]);
  });
});

describe('query checker - streams and outputs', () => {
  it('reports INVALID_STREAM_REFERENCE for a stream that does not exist, and nothing more', () => {
    const result = check('from /streams/demo/nothing/here where a > 1 select a, b');
    expect(result.errors).toEqual([{ type: 'INVALID_STREAM_REFERENCE', stream: '/streams/demo/nothing/here' }]);
    expect(fieldsOf(result)).toEqual(['a: unknown?', 'b: unknown?']);
  });

  it('reports INVALID_STREAM_REFERENCE for a logical stream no query writes', () => {
    expect(errorsOf(EXAMPLES.logFrom)).toEqual([{ type: 'INVALID_STREAM_REFERENCE', stream: 'x' }]);
    const first = check(EXAMPLES.logInto);
    const context = { logicalStreams: new Map([['x', [writer('q1', first)]]]) };
    expect(errorsOf('from x select host into x', context)).toEqual([{ type: 'INVALID_STREAM_REFERENCE', stream: 'x' }]);
  });

  it('reports LOGICAL_STREAM_CONFLICT when writers of one logical stream disagree on its schema', () => {
    const first = check(EXAMPLES.logInto);
    const context = { logicalStreams: new Map([['x', [writer('q1', first)]]]) };
    expect(errorsOf(`from ${LOG1} select msg, host into x`, context)).toEqual([]);
    const conflict = check(`from ${CPU} select host into x`, context);
    expect(conflict.errors).toEqual([{ type: 'LOGICAL_STREAM_CONFLICT', stream: 'x' }]);
    expect(conflict.diagnostics[0]?.message).toBe("query 'q1' writes rows of another schema into the logical stream 'x'");
  });

  it('reads the keys and boundedness of a logical stream from its writers', () => {
    const grouped = check(`from historical ${CPU} group by host select host, count() as n into perHost`);
    const reader = check('from perHost where n > 2 select host, n', { logicalStreams: new Map([['perHost', [writer('q1', grouped)]]]) });
    expect(reader.errors).toEqual([]);
    expect(reader.output).toMatchObject({ outputType: 'BOUNDED', isHistorical: true });
    expect(reader.output.schema.config.key).toEqual(['host']);
  });

  it('writes into a physical stream that exists and accepts the rows', () => {
    const result = check(`from ${CPU} select host, user into ${CPU_COPY}`);
    expect(result.errors).toEqual([]);
    expect(result.output.target).toEqual({ kind: 'physical', uri: CPU_COPY });
    expect(errorsOf(`from ${CPU} select host, kernel, user > 1 as note into ${CPU_COPY}`)).toEqual([
      { type: 'INVALID_FIELD_REFERENCE', field: 'kernel' },
      { type: 'TYPE_MISMATCH', expected: 'string', actual: 'boolean', expression: 'note' },
    ]);
    expect(errorsOf(`from ${CPU} select user into ${CPU_COPY}`)).toEqual([
      { type: 'TYPE_MISMATCH', expected: 'string', actual: 'null', expression: 'host' },
    ]);
    expect(errorsOf(`from ${CPU} into /streams/demo/nothing/here`)).toEqual([
      { type: 'INVALID_STREAM_REFERENCE', stream: '/streams/demo/nothing/here' },
    ]);
    expect(errorsOf(`from ${CPU} into ${CPU}`)).toEqual([{ type: 'INVALID_STREAM_REFERENCE', stream: CPU }]);
    expect(errorsOf(`from historical ${CPU} into ${CPU}`)).toEqual([]);
  });

  it('turns a syntax error into the only error of an analysis', () => {
    expect(analyseQuery('from x where', BASE)).toEqual({
      errors: [{ type: 'SYNTAX_ERROR', line: 1, column: 13, message: 'expected an expression but found end of input' }],
      diagnostics: [
        {
          error: { type: 'SYNTAX_ERROR', line: 1, column: 13, message: 'expected an expression but found end of input' },
          line: 1,
          column: 13,
          message: 'expected an expression but found end of input',
        },
      ],
    });
  });
});

describe('query checker - function tables', () => {
  it('types exactly the built-ins the evaluator defines, and no aggregate shadows one', () => {
    expect([...BUILTIN_SIGNATURES.keys()].sort()).toEqual(Object.keys(builtinFunctions).sort());
    for (const name of AGGREGATE_SIGNATURES.keys()) expect(BUILTIN_SIGNATURES.has(name)).toBe(false);
  });
});
