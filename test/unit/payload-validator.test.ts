import { describe, it, expect } from 'vitest';
import { parseDatetime } from '../../src/lib/iso-time.js';
import { compileValidator, type PayloadValidator } from '../../src/streams/payload-validator.js';
import { Prng } from '../sim/prng.js';
import { parseSchema } from '../../src/streams/schema.js';

function validatorFor(properties: Record<string, unknown>): PayloadValidator {
  return compileValidator(parseSchema({ version: '1', topDef: { type: 'record', properties } }));
}

/** A validator for one required field `v` of the given type definition. */
function single(type: unknown): (value: unknown) => string | undefined {
  const validate = validatorFor({ v: type });
  return (value) => validate({ v: value });
}

interface TypeCase {
  type: unknown;
  valid: unknown[];
  invalid: Array<[unknown, string]>;
}

const CASES: Record<string, TypeCase> = {
  string: { type: { type: 'string' }, valid: ['', 'x'], invalid: [[1, 'expected string, got number']] },
  double: {
    type: { type: 'double' },
    valid: [0, -1.5, 1e300],
    invalid: [
      ['1.5', 'expected double, got string'],
      [Number.NaN, 'expected double (finite number), got NaN'],
    ],
  },
  int: {
    type: { type: 'int' },
    valid: [0, -2147483648, 2147483647],
    invalid: [
      [2147483648, 'expected int (integer from -2147483648 to 2147483647), got 2147483648'],
      [1.5, 'expected int (integer from -2147483648 to 2147483647), got 1.5'],
      [true, 'expected int, got boolean'],
    ],
  },
  long: {
    type: { type: 'long' },
    // Beyond 2^53 a long arrives as BigInt (src/lib/json.ts) and is kept exactly.
    valid: [9007199254740991, -9007199254740991, 855448618232418307n, 2n ** 63n - 1n, -(2n ** 63n)],
    invalid: [
      [2 ** 53 + 2, 'expected long (integer from -9223372036854775808 to 9223372036854775807), got 9007199254740994'],
      [2n ** 63n, 'expected long (integer from -9223372036854775808 to 9223372036854775807), got 9223372036854775808'],
      [1.5, 'expected long (integer from -9223372036854775808 to 9223372036854775807), got 1.5'],
    ],
  },
  short: {
    type: { type: 'short' },
    valid: [-32768, 32767],
    invalid: [[32768, 'expected short (integer from -32768 to 32767), got 32768']],
  },
  byte: {
    type: { type: 'byte' },
    valid: [-128, 127],
    invalid: [
      [128, 'expected byte (integer from -128 to 127), got 128'],
      ['1', 'expected byte, got string'],
    ],
  },
  boolean: { type: { type: 'boolean' }, valid: [true, false], invalid: [['true', 'expected boolean, got string']] },
  datetime: {
    type: { type: 'datetime' },
    valid: [
      '2024-01-31T12:00:00Z',
      '2024-02-29T23:59:59.123456789+05:30',
      '2024-01-31T12:00-0800',
      '2024-01-31T12:00:00',
      '2024-01-31',
    ],
    invalid: [
      ['2023-13-01', "expected datetime (ISO 8601, e.g. 2024-01-31T12:00:00Z), got '2023-13-01'"],
      ['2023-02-30T00:00:00Z', "expected datetime (ISO 8601, e.g. 2024-01-31T12:00:00Z), got '2023-02-30T00:00:00Z'"],
      ['yesterday', "expected datetime (ISO 8601, e.g. 2024-01-31T12:00:00Z), got 'yesterday'"],
      [1706702400000, 'expected datetime, got number'],
    ],
  },
  date: {
    type: { type: 'date' },
    valid: ['2024-02-29', '2000-02-29'],
    invalid: [
      ['2023-02-29', "expected date (YYYY-MM-DD), got '2023-02-29'"],
      ['2024-01-31T00:00:00Z', "expected date (YYYY-MM-DD), got '2024-01-31T00:00:00Z'"],
    ],
  },
  time: {
    type: { type: 'time' },
    valid: ['00:00', '23:59:59', '12:30:00.250'],
    invalid: [
      ['24:00', "expected time (HH:MM[:SS[.fff]]), got '24:00'"],
      ['12:60', "expected time (HH:MM[:SS[.fff]]), got '12:60'"],
    ],
  },
  duration: {
    type: { type: 'duration' },
    valid: ['P1DT2H', 'PT0.5S', 'P2W', 'P1Y2M3DT4H5M6S'],
    invalid: [
      ['P', "expected duration (ISO 8601, e.g. P1DT2H), got 'P'"],
      ['PT', "expected duration (ISO 8601, e.g. P1DT2H), got 'PT'"],
      ['P0.5DT1H', "expected duration (ISO 8601, e.g. P1DT2H), got 'P0.5DT1H'"],
      ['1 day', "expected duration (ISO 8601, e.g. P1DT2H), got '1 day'"],
    ],
  },
  uuid: {
    type: { type: 'uuid' },
    valid: ['123e4567-e89b-12d3-a456-426614174000', 'ABCDEF01-2345-6789-ABCD-EF0123456789'],
    invalid: [['123e4567e89b12d3a456426614174000', "expected uuid (8-4-4-4-12 hex digits), got '123e4567e89b12d3a456426614174000'"]],
  },
  email: {
    type: { type: 'email' },
    valid: ['ops@example.com', 'first.last+tag@mail.example.co.uk'],
    invalid: [
      ['ops@localhost', "expected email (local@domain.tld), got 'ops@localhost'"],
      ['ops example.com', "expected email (local@domain.tld), got 'ops example.com'"],
      ['a@b@c.com', "expected email (local@domain.tld), got 'a@b@c.com'"],
    ],
  },
  uri: {
    type: { type: 'uri' },
    valid: ['https://example.com/a?b=c', 'urn:itrs:default-timestamp', 'mailto:ops@example.com'],
    invalid: [
      ['/relative/path', "expected uri (absolute URI with a scheme), got '/relative/path'"],
      ['http://', "expected uri (absolute URI with a scheme), got 'http://'"],
    ],
  },
  ip: {
    type: { type: 'ip' },
    valid: ['10.0.0.1', '::1', '2001:db8::8a2e:370:7334'],
    invalid: [
      ['300.1.1.1', "expected ip (IPv4 or IPv6 address), got '300.1.1.1'"],
      ['example.com', "expected ip (IPv4 or IPv6 address), got 'example.com'"],
    ],
  },
  geoPoint: {
    type: { type: 'geoPoint' },
    valid: [{ lat: 51.5, lon: -0.12 }, { latitude: -90, longitude: 180 }, '51.5,-0.12', ' 51.5 , -0.12 '],
    invalid: [
      [
        { lat: 91, lon: 0 },
        "expected geoPoint ({lat, lon} or 'lat,lon' with lat in -90..90, lon in -180..180), got lat 91, lon 0",
      ],
      [
        { lat: '51', lon: 0 },
        "expected geoPoint ({lat, lon} or 'lat,lon' with lat in -90..90, lon in -180..180), got object without numeric lat",
      ],
      [
        '51.5;0',
        "expected geoPoint ({lat, lon} or 'lat,lon' with lat in -90..90, lon in -180..180), got '51.5;0'",
      ],
      [
        '0,181',
        "expected geoPoint ({lat, lon} or 'lat,lon' with lat in -90..90, lon in -180..180), got '0,181'",
      ],
      [[51.5, 0], 'expected geoPoint, got array'],
    ],
  },
  contributor: {
    type: { type: 'contributor', definition: 'server' },
    valid: ['123e4567-e89b-12d3-a456-426614174000', 'x'.repeat(128)],
    invalid: [
      ['', "expected contributor (non-empty string of at most 128 characters), got ''"],
      ['x'.repeat(129), 'expected contributor (non-empty string of at most 128 characters), got string of 129 characters'],
      [7, 'expected contributor, got number'],
    ],
  },
};

describe('payload validator', () => {
  for (const [kind, { type, valid, invalid }] of Object.entries(CASES)) {
    it(`${kind} - accepts valid values`, () => {
      const validate = single(type);
      for (const value of valid) expect(validate(value), String(typeof value === "bigint" ? `${value}n` : JSON.stringify(value))).toBeUndefined();
    });

    it(`${kind} - rejects invalid values naming the field`, () => {
      const validate = single(type);
      for (const [value, problem] of invalid) expect(validate(value)).toBe(`field 'v': ${problem}`);
    });
  }

  it('required - reports a missing or null field declared optional false (boolean or string)', () => {
    const validate = validatorFor({ host: { type: 'string', optional: false }, port: { type: 'int', optional: 'false' } });
    expect(validate({ port: 80 })).toBe("field 'host': missing required field");
    expect(validate({ host: null, port: 80 })).toBe("field 'host': expected string, got null");
    expect(validate({ host: 'a' })).toBe("field 'port': missing required field");
  });

  it('optional - fields that say nothing accept missing and null values, and present ones are still checked', () => {
    const validate = validatorFor({ position: { type: 'record', properties: { latitude: { type: 'double' }, altitude: { type: 'double' } } }, gender: { type: 'string' } });
    expect(validate({ position: { latitude: 51.5 } })).toBeUndefined();
    expect(validate({ position: { latitude: 51.5, altitude: null }, gender: null })).toBeUndefined();
    expect(validate({})).toBeUndefined();
    expect(validate({ position: { latitude: 'north' } })).toBe("field 'position.latitude': expected double, got string");
    expect(validate({ gender: 1 })).toBe("field 'gender': expected string, got number");
  });

  it('optional - accepts a missing or null optional field and checks a present one', () => {
    const validate = validatorFor({ note: { type: 'string', optional: true } });
    expect(validate({})).toBeUndefined();
    expect(validate({ note: null })).toBeUndefined();
    expect(validate({ note: 3 })).toBe("field 'note': expected string, got number");
  });

  it('unknown fields - are accepted without checks', () => {
    const validate = validatorFor({ host: { type: 'string' } });
    expect(validate({ host: 'a', extra: { any: [1, 'x'] }, other: null })).toBeUndefined();
  });

  it('records - name the nested dotted path', () => {
    const validate = validatorFor({
      position: {
        type: 'record',
        properties: { latitude: { type: 'double' }, source: { type: 'record', optional: false, properties: { id: { type: 'uuid' } } } },
      },
    });
    const source = { id: '123e4567-e89b-12d3-a456-426614174000' };
    expect(validate({ position: { latitude: 1, source } })).toBeUndefined();
    expect(validate({ position: { latitude: 'north', source } })).toBe(
      "field 'position.latitude': expected double, got string",
    );
    expect(validate({ position: { latitude: 1 } })).toBe("field 'position.source': missing required field");
    expect(validate({ position: { latitude: 1, source: { id: 'x' } } })).toBe(
      "field 'position.source.id': expected uuid (8-4-4-4-12 hex digits), got 'x'",
    );
    expect(validate({ position: [1, 2] })).toBe("field 'position': expected record, got array");
  });

  it('arrays - name the index of a bad element', () => {
    const validate = validatorFor({
      tags: { type: 'sequence', underlying: { type: 'string', optional: false } },
      points: { type: 'array', items: { type: 'record', properties: { ip: { type: 'ip' } } } },
      matrix: { type: 'array', items: { type: 'array', items: { type: 'int' } } },
    });
    const good = { tags: ['a'], points: [{ ip: '::1' }], matrix: [[1], []] };
    expect(validate(good)).toBeUndefined();
    expect(validate({ ...good, tags: ['a', 'b', 3] })).toBe("field 'tags[2]': expected string, got number");
    expect(validate({ ...good, tags: ['a', null] })).toBe("field 'tags[1]': expected string, got null");
    expect(validate({ ...good, points: [{ ip: '::1' }, { ip: '300.1.1.1' }] })).toBe(
      "field 'points[1].ip': expected ip (IPv4 or IPv6 address), got '300.1.1.1'",
    );
    expect(validate({ ...good, matrix: [[1], [2, 'x']] })).toBe("field 'matrix[1][1]': expected int, got string");
    expect(validate({ ...good, tags: 'a' })).toBe("field 'tags': expected array, got string");
  });

  it('arrays - accept null elements when the element type is optional', () => {
    const validate = validatorFor({ tags: { type: 'array', items: { type: 'string', optional: true } } });
    expect(validate({ tags: ['a', null] })).toBeUndefined();
  });

  it('arrays - a bare array accepts elements of any JSON type', () => {
    const validate = validatorFor({ any: { type: 'array' } });
    expect(validate({ any: [1, 'x', null, { a: 1 }, [2]] })).toBeUndefined();
    expect(validate({ any: { 0: 1 } })).toBe("field 'any': expected array, got object");
  });

  it('payload - must be a JSON object', () => {
    const validate = validatorFor({ a: { type: 'int', optional: true } });
    expect(validate([])).toBe('payload: expected object, got array');
    expect(validate(null)).toBe('payload: expected object, got null');
    expect(validate('x')).toBe('payload: expected object, got string');
    expect(validate(undefined)).toBe('payload: expected object, got undefined');
    expect(validate({})).toBeUndefined();
  });

  it('field names - shared with Object.prototype are read as own properties only', () => {
    const schema = parseSchema(
      JSON.parse('{"version":"1","topDef":{"type":"record","properties":{"constructor":{"type":"string","optional":false},"__proto__":{"type":"int","optional":false}}}}'),
    );
    const validate = compileValidator(schema);
    expect(validate({})).toBe("field 'constructor': missing required field");
    expect(validate(JSON.parse('{"constructor":"c"}'))).toBe("field '__proto__': missing required field");
    expect(validate(JSON.parse('{"constructor":"c","__proto__":"x"}'))).toBe(
      "field '__proto__': expected int, got string",
    );
    expect(validate(JSON.parse('{"constructor":"c","__proto__":1}'))).toBeUndefined();
  });
});

describe('parseDatetime', () => {
  it('parseDatetime - reads the toISOString form as the pattern reads the same instant with another zone', () => {
    const prng = new Prng(3);
    const chars = '0123456789-T:.Z x';
    for (let run = 0; run < 5_000; run += 1) {
      let text = new Date(prng.int(-70_000, 300_000) * 1e8 + prng.int(0, 1e8)).toISOString();
      if (text.length !== 24) continue;
      if (prng.int(0, 3) === 0) text = text.slice(0, 19) + 'Z';
      // Damage a character now and then: a digit out of range, a separator, a calendar day.
      if (prng.int(0, 1) === 0) {
        const at = prng.int(0, text.length - 2);
        text = text.slice(0, at) + chars[prng.int(0, chars.length - 1)] + text.slice(at + 1);
      }
      expect(parseDatetime(text), text).toBe(parseDatetime(`${text.slice(0, -1)}+00:00`));
    }
    expect(parseDatetime('2023-02-29T00:00:00.000Z')).toBeUndefined();
    expect(parseDatetime('2024-02-29T23:59:59.999Z')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 999));
  });

  it('parseDatetime - reads a text again as the first time, whatever was read between', () => {
    const texts = ['', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z', '', '2023-02-29T00:00:00.000Z', '2024-01-01T00:00:01Z', '2023-02-29T00:00:00.000Z', '2024-01-01T00:00:01Z'];
    expect(texts.map((text) => parseDatetime(text))).toEqual([undefined, Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1), undefined, undefined, Date.UTC(2024, 0, 1, 0, 0, 1), undefined, Date.UTC(2024, 0, 1, 0, 0, 1)]);
  });

  it('parseDatetime - converts zones to epoch milliseconds', () => {
    expect(parseDatetime('2024-01-31T12:00:00Z')).toBe(Date.UTC(2024, 0, 31, 12));
    expect(parseDatetime('2024-01-31T12:00:00')).toBe(Date.UTC(2024, 0, 31, 12));
    expect(parseDatetime('2024-01-31T17:30:00+05:30')).toBe(Date.UTC(2024, 0, 31, 12));
    expect(parseDatetime('2024-01-31T04:00-0800')).toBe(Date.UTC(2024, 0, 31, 12));
    expect(parseDatetime('2024-01-31')).toBe(Date.UTC(2024, 0, 31));
    expect(parseDatetime('2024-01-31T12:00:00.123456789Z')).toBe(Date.UTC(2024, 0, 31, 12, 0, 0, 123));
    expect(parseDatetime('2024-01-31T12:00:00.5Z')).toBe(Date.UTC(2024, 0, 31, 12, 0, 0, 500));
  });

  it('parseDatetime - agrees with Date.parse on valid dates across eras', () => {
    for (const text of ['1970-01-01T00:00:00Z', '1969-12-31T23:59:59Z', '2000-02-29T00:00:00Z', '0001-01-01T00:00:00Z', '0050-06-15T00:00:00Z', '9999-12-31T23:59:59.999Z']) {
      expect(parseDatetime(text), text).toBe(Date.parse(text));
    }
  });

  it('parseDatetime - rejects invalid calendar dates, times and zones', () => {
    for (const text of [
      '2023-13-01',
      '2023-02-29',
      '2023-02-30T00:00:00Z',
      '2024-04-31T00:00:00Z',
      '2024-01-01T24:00:00Z',
      '2024-01-01T12:60Z',
      '2024-01-01T12:00:60Z',
      '2024-01-01T12:00:00+24:00',
      '2024-01-01T12:00:00.1234567890Z',
      '2024-01-01 12:00:00Z',
      '2024-1-01',
      'yesterday',
      '',
    ]) {
      expect(parseDatetime(text), text).toBeUndefined();
    }
    expect(parseDatetime('1900-02-29')).toBeUndefined();
    expect(parseDatetime('2000-02-29')).toBe(Date.UTC(2000, 1, 29));
  });
});
