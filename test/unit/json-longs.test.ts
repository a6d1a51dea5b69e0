import { describe, expect, it } from 'vitest';
import { canonicalJson, parseJson, stringifyJson } from '../../src/lib/json.js';
import { compileExpression } from '../../src/expression/index.js';

// Tweet ids: above 2^53, where JSON.parse would round them.
const ID = '855448618232418307';
const NEXT = '855448618232418308';

describe('json - longs beyond 2^53', () => {
  it('reads them as BigInt and writes back the same digits; safe numbers stay numbers', () => {
    const text = `{"tweet":{"id":${ID},"retweets":[${NEXT},-9223372036854775808]},"count":12,"ratio":0.1234567890123456789,"id_str":"${ID}"}`;
    const value = parseJson(text) as any;
    expect(value.tweet.id).toBe(BigInt(ID));
    expect(value.tweet.retweets).toEqual([BigInt(NEXT), -(2n ** 63n)]);
    expect(value.count).toBe(12);
    expect(typeof value.ratio).toBe('number');
    expect(stringifyJson(value)).toBe(`{"tweet":{"id":${ID},"retweets":[${NEXT},-9223372036854775808]},"count":12,"ratio":0.12345678901234568,"id_str":"${ID}"}`);
    expect(canonicalJson(value)).toBe(`{"count":12,"id_str":"${ID}","ratio":0.12345678901234568,"tweet":{"id":${ID},"retweets":[${NEXT},-9223372036854775808]}}`);
    expect(stringifyJson({ plain: [1, 'a', null] })).toBe('{"plain":[1,"a",null]}');
    expect(parseJson('{"__proto__":{"polluted":1}}')).toEqual(JSON.parse('{"__proto__":{"polluted":1}}'));
    expect(({} as any).polluted).toBeUndefined();
  });

  it('reads full-precision doubles with JSON.parse (the fast path) and longs in strings as strings', () => {
    expect(parseJson('{"mem":23.45678901234567812,"tiny":1.2345678901234567e-5,"id_str":"855448618232418307"}')).toEqual({
      mem: 23.45678901234567812,
      tiny: 1.2345678901234567e-5,
      id_str: '855448618232418307',
    });
    expect(parseJson('[9007199254740993]')).toEqual([9007199254740993n]);
  });

  it('compares them exactly in expressions, also against literals beyond 2^53', () => {
    const row = parseJson(`{"tweet":{"id":${ID}}}`) as Record<string, unknown>;
    const test = (source: string) => compileExpression(source)(row);
    expect(test(`tweet.id == ${ID}`)).toBe(true);
    // 855448618232418304 is the double JSON.parse would have made of the id.
    expect(test('tweet.id == 855448618232418304')).toBe(false);
    expect(test(`tweet.id < ${NEXT}`)).toBe(true);
    expect(test('tweet.id > 9007199254740991')).toBe(true);
    expect(test('-tweet.id < 0')).toBe(true);
  });
});
