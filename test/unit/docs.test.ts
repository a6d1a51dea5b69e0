// The user documentation, checked as a reader of a clone would find it: README.md and
// docs/*.md name no issue of a tracker the reader cannot see, link and cite only files the
// repository has (and headings those files have), and the configuration table is the one
// the config schema gives (`npm run docs` writes it). The source (src/**/*.ts and
// console/*.js) is held to the same: its comments and messages name no issue and cite no
// document kept outside the repository.

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { configurationDocPath, configurationTable, withConfigurationTable } from '../../scripts/docs.js';
import { architectureDocPath, layerTable, withLayerTable } from '../../scripts/layers.js';

const ROOT = packageRoot();
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
/** Top-level folders of the repository a document may cite paths in. */
const CITED_FOLDERS = ['src', 'test', 'bench', 'scripts', 'config', 'console', 'docs', 'proto', '.ci'];

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The source files a reader opens: every .ts under src/, and the console's scripts. */
const SOURCES = [
  ...readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `src/${name.split('\\').join('/')}`),
  ...readdirSync(join(ROOT, 'console'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => `console/${name}`),
].sort();

/** What a source line must not say: an issue of the tracker, or a document kept outside the repository. */
const UNFOLLOWABLE: [RegExp, string][] = [
  [/\bissues?\s+#?\d+/i, 'an issue number'],
  [/\b(?:DESIGN|STYLE|DEPENDENCIES|QUERY-LANGUAGE)\.md\b/, 'a document that is not in the repository'],
  [/(?<![\w-])shared\//, 'a document that is not in the repository'],
];

/** Each line of a source that names an issue or a document outside the repository, as file:line. */
function unfollowableCitations(path: string, text = read(path)): string[] {
  return text.split('\n').flatMap((line, index) => {
    const found = new Set(UNFOLLOWABLE.filter(([pattern]) => pattern.test(line)).map(([, what]) => what));
    return [...found].map((what) => `${path}:${index + 1}: cites ${what}: ${line.trim()}`);
  });
}

/** Text outside fenced code blocks (commands and sample output are not prose). */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of prose(read(path)).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = anchor(match[1]!);
    let candidate = base;
    for (let n = 1; anchors.has(candidate); n++) candidate = `${base}-${n}`;
    anchors.add(candidate);
  }
  return anchors;
}

/** Problems with the links of one document: missing files, missing headings. */
function brokenLinks(path: string, text = read(path)): string[] {
  const problems: string[] = [];
  for (const match of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (/^[a-z]+:/i.test(target)) {
      if (!target.startsWith('https://') && !target.startsWith('http://')) problems.push(`${path}: link ${target}`);
      continue;
    }
    const [file, fragment] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? path : normalize(join(dirname(path), file));
    if (resolved.startsWith('..') || !existsSync(join(ROOT, resolved))) {
      problems.push(`${path}: link to ${target}, which is not in the repository`);
      continue;
    }
    if (fragment !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(fragment)) {
      problems.push(`${path}: link to ${target}, a heading ${relative(ROOT, join(ROOT, resolved))} does not have`);
    }
  }
  return problems;
}

/** Files a document names (repository paths, and any *.md) that the repository does not have. */
function missingCitations(path: string, text = read(path)): string[] {
  const folders = CITED_FOLDERS.map((folder) => folder.replace('.', '\\.')).join('|');
  const cited = [
    ...[...text.matchAll(new RegExp(`(?<![\\w./<-])(?:${folders})/[\\w./-]*`, 'g'))].map((match) => match[0].replace(/[.]+$/, '')),
    ...[...text.matchAll(/(?<![\w/.-])[\w-]+\.md\b/g)].map((match) => match[0]),
  ];
  return [...new Set(cited)]
    .filter((file) => !existsSync(join(ROOT, file)) && !(file.endsWith('.md') && !file.includes('/') && existsSync(join(ROOT, 'docs', file))))
    .map((file) => `${path}: cites ${file}, which is not in the repository`);
}

describe('docs - what a reader of a clone can follow', () => {
  it('README.md and docs/*.md mention no issue number', () => {
    const mentions = DOCUMENTS.flatMap((path) =>
      [...read(path).matchAll(/\bissues?\s+#?\d+/gi)].map((match) => `${path}: "${read(path).slice(Math.max(0, match.index - 30), match.index + 30).replace(/\n/g, ' ')}"`),
    );
    expect(mentions).toEqual([]);
  });

  it('every link points at a file, and a heading, of the repository', () => {
    expect(DOCUMENTS.flatMap((path) => brokenLinks(path))).toEqual([]);
  });

  it('every file named is in the repository', () => {
    expect(DOCUMENTS.flatMap((path) => missingCitations(path))).toEqual([]);
  });

  it('src/**/*.ts and console/*.js cite no issue and no document outside the repository', () => {
    expect(SOURCES.length).toBeGreaterThan(100);
    expect(SOURCES).toContain('console/console.js');
    expect(SOURCES.flatMap((path) => unfollowableCitations(path))).toEqual([]);
  });

  it('the checks find what they look for', () => {
    // A document that breaks each rule once: every break is found, and nothing else.
    const bad = [
      'See [the design](../DESIGN.md), [storage](storage.md#no-such-heading) and [ok](storage.md).',
      'As STYLE.md says, `src/no-such-file.ts` does it; `src/config/config.ts` exists.',
    ].join('\n');
    expect(brokenLinks('docs/bad.md', bad)).toEqual([
      'docs/bad.md: link to ../DESIGN.md, which is not in the repository',
      'docs/bad.md: link to storage.md#no-such-heading, a heading docs/storage.md does not have',
    ]);
    expect(missingCitations('docs/bad.md', bad)).toEqual([
      'docs/bad.md: cites src/no-such-file.ts, which is not in the repository',
      'docs/bad.md: cites STYLE.md, which is not in the repository',
    ]);
    expect(anchor('Search (`/ssr/:tenant/_search`, `_facet`)')).toBe('search-ssrtenant_search-_facet');
    // A source that breaks each rule once: every break is found, by line, and nothing else.
    const source = [
      '// Hints (docs/cluster.md, "Hints"): replayed later.',
      '// A pure core (STYLE.md, "a pure core").',
      '/** Writes (issue 12, item 5). */',
      "const flag = '--no-node-snapshot'; // see ../shared/DEPENDENCIES.md",
      "throw new Error('the grammar of QUERY-LANGUAGE.md');",
      '// Issues #7 and 8 are not named either; a shared-nothing design is fine.',
    ].join('\n');
    expect(unfollowableCitations('src/bad.ts', source)).toEqual([
      'src/bad.ts:2: cites a document that is not in the repository: // A pure core (STYLE.md, "a pure core").',
      'src/bad.ts:3: cites an issue number: /** Writes (issue 12, item 5). */',
      "src/bad.ts:4: cites a document that is not in the repository: const flag = '--no-node-snapshot'; // see ../shared/DEPENDENCIES.md",
      "src/bad.ts:5: cites a document that is not in the repository: throw new Error('the grammar of QUERY-LANGUAGE.md');",
      'src/bad.ts:6: cites an issue number: // Issues #7 and 8 are not named either; a shared-nothing design is fine.',
    ]);
  });
});

describe('docs - tables made from code', () => {
  it('docs/configuration.md has the table the config schema gives (run `npm run docs`)', () => {
    const text = readFileSync(configurationDocPath(), 'utf8');
    expect(withConfigurationTable(text, configurationTable())).toBe(text);
  });

  it('docs/architecture.md has the layer table of scripts/layers.ts (run `npm run docs`)', () => {
    const text = readFileSync(architectureDocPath(), 'utf8');
    expect(withLayerTable(text, layerTable())).toBe(text);
  });
});
