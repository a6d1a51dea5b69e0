import { describe, expect, it } from 'vitest';
import { countPath, countRanges, emptyTree, mergeTrees, parseFacetRequests, renderTaxonomyFacet } from '../../src/search/facets.js';
import { addToHistogram, bucketCount, chooseFrequency, emptyHistogram, mergeHistograms } from '../../src/search/histogram.js';

describe('histogram - buckets', () => {
  const start = Date.UTC(2024, 0, 31, 23, 59, 59, 500);
  const end = Date.UTC(2024, 2, 1, 0, 0, 0, 0);

  it('counts calendar buckets in UTC, the range inclusive at both ends', () => {
    expect(bucketCount(start, end, 'MONTH')).toBe(3);
    expect(bucketCount(start, end, 'DAY')).toBe(31);
    expect(bucketCount(start, end, 'YEAR')).toBe(1);
    const histogram = emptyHistogram(start, end, 'MONTH');
    for (const ms of [start, Date.UTC(2024, 1, 15), Date.UTC(2024, 1, 29, 23), end, end + 1, start - 1]) addToHistogram(histogram, start, end, ms);
    expect(histogram.buckets).toEqual([1, 2, 1]);
    expect(histogram.start).toBe('2024-01-31T23:59:59.500Z');
  });

  it('chooses the frequency whose bucket count is closest to the one asked', () => {
    expect(chooseFrequency(Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1, 23, 59), 24)).toBe('HOUR');
    expect(chooseFrequency(Date.UTC(2020, 0, 1), Date.UTC(2024, 11, 31), 5)).toBe('YEAR');
    expect(chooseFrequency(Date.UTC(2024, 0, 1), Date.UTC(2024, 0, 1, 0, 0, 30), 30)).toBe('SECOND');
  });

  it('refuses too many buckets, and merges exactly', () => {
    expect(() => emptyHistogram(0, Date.UTC(2024, 0, 1), 'MILLIS')).toThrow(/buckets/);
    const a = emptyHistogram(0, 3_000, 'SECOND');
    const b = emptyHistogram(0, 3_000, 'SECOND');
    addToHistogram(a, 0, 3_000, 100);
    addToHistogram(b, 0, 3_000, 2_500);
    addToHistogram(b, 0, 3_000, 900);
    mergeHistograms(a, b);
    expect(a.buckets).toEqual([2, 0, 1, 0]);
  });
});

describe('facets - taxonomy and range', () => {
  it('renders topN per level, highest count first, to the depth asked, with include paths', () => {
    const tree = emptyTree();
    const rows: Array<[string, string, number]> = [['eu', 'paris', 5], ['eu', 'oslo', 2], ['us', 'nyc', 4], ['asia', 'tokyo', 1]];
    for (const [region, city, n] of rows) for (let i = 0; i < n; i += 1) countPath(tree, [region, city]);
    const [request] = parseFacetRequests([{ type: 'taxonomy', dimension: 'place', topN: 2, include: [{ path: ['asia', 'tokyo'] }] }]);
    const node = renderTaxonomyFacet(tree, request as never);
    expect(node).toEqual({
      name: 'place',
      count: 12,
      children: [
        { value: 'eu', count: 7, children: [{ value: 'paris', count: 5, children: [] }, { value: 'oslo', count: 2, children: [] }] },
        { value: 'us', count: 4, children: [{ value: 'nyc', count: 4, children: [] }] },
        { value: 'asia', count: 1, children: [{ value: 'tokyo', count: 1, children: [] }] },
      ],
    });
    const shallow = renderTaxonomyFacet(tree, { type: 'taxonomy', dimension: 'place', topN: 5, depth: 1, include: [] });
    expect(shallow.children.every((child) => child.children.length === 0)).toBe(true);
  });

  it('merges count trees from several nodes exactly', () => {
    const a = emptyTree();
    const b = emptyTree();
    countPath(a, ['x', 'y']);
    countPath(b, ['x', 'z']);
    countPath(b, ['w', undefined]);
    mergeTrees(a, b);
    expect(a.count).toBe(3);
    expect(a.children.get('x')!.count).toBe(2);
    expect(a.children.get('w')!.children.size).toBe(0);
  });

  it('counts ranges with inclusive defaults and from-to labels', () => {
    const [request] = parseFacetRequests([{ type: 'range', field: 'temp', ranges: [{ from: 0, to: 10 }, { label: 'warm', from: 10, fromInclusive: false, to: 30, toInclusive: false }] }]);
    const node = countRanges(request as never, [0, 10, 10.5, 29.9, 30, -1, 'x']);
    expect(node).toEqual({ name: 'temp', count: 4, children: [{ value: '0-10', count: 2, children: [] }, { value: 'warm', count: 2, children: [] }] });
  });

  it('counts overlapping ranges as a per-range check of every value would (random, seeded)', () => {
    let seed = 7;
    const next = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 200; round++) {
      const ranges = Array.from({ length: 1 + Math.floor(next() * 8) }, () => {
        const a = Math.floor(next() * 20) - 5;
        const b = a + Math.floor(next() * 10);
        return { label: `${a}`, from: a, to: b, fromInclusive: next() < 0.5, toInclusive: next() < 0.5 };
      });
      const values = Array.from({ length: 50 }, () => (next() < 0.5 ? Math.floor(next() * 30) - 8 : next() * 30 - 8));
      const inRange = (range: (typeof ranges)[number], v: number) => (range.fromInclusive ? v >= range.from : v > range.from) && (range.toInclusive ? v <= range.to : v < range.to);
      const node = countRanges({ type: 'range', field: 'f', ranges }, values);
      expect(node.count).toBe(values.filter((v) => ranges.some((range) => inRange(range, v))).length);
      expect(node.children.map((child) => child.count)).toEqual(ranges.map((range) => values.filter((v) => inRange(range, v)).length));
    }
  });

  it('refuses more ranges than the limit, naming it', () => {
    const ranges = Array.from({ length: 257 }, (_, i) => ({ from: i, to: i + 1 }));
    expect(() => parseFacetRequests([{ type: 'range', field: 'f', ranges }])).toThrow(/257 ranges; the limit is 256/);
    const half = ranges.slice(0, 150);
    expect(() => parseFacetRequests([{ type: 'range', field: 'f', ranges: half }, { type: 'range', field: 'g', ranges: half }])).toThrow(/300 ranges; the limit is 256/);
  });

  it('refuses malformed facet requests', () => {
    expect(() => parseFacetRequests([{ type: 'taxonomy' }])).toThrow(/dimension/);
    expect(() => parseFacetRequests([{ type: 'taxonomy', dimension: 'd', topN: 0 }])).toThrow(/topN/);
    expect(() => parseFacetRequests([{ type: 'range', field: 'f', ranges: [{ from: 'a', to: 1 }] }])).toThrow(/numbers/);
    expect(() => parseFacetRequests([{ type: 'pie' }])).toThrow(/type/);
  });
});
