// Domains (spec, "Domain"; issue 5, item 3): a named group of contributors, given by
// filters; each filter names a contributor type and an expression of the shared expression
// module that instance documents of that type must match. Pure code: parsing, compiling
// and evaluating; the service feeds it the instances.

import { BadRequestError } from '../errors.js';
import { isPlainObject, jsonTypeName, stringifyJson } from '../json.js';
import { checkName } from '../names.js';
import { contributorTypeUri, parseContributorTypeUri } from '../contributors/contributor-schema.js';
import { compileExpression, ExpressionError, matches, type Evaluator } from '../search/expression/index.js';

export interface ContributorFilter {
  /** Contributor type URI (`/contributors/<tenant>/<type>`) or bare type name, as sent. */
  contributor: string;
  /** An expression; '' matches every instance of the type. */
  query: string;
}

/** What PUT stores and GET returns. */
export interface DomainDocument {
  contributorFilters: ContributorFilter[];
  userData?: Record<string, unknown>;
}

export interface DomainLimits {
  filtersPerDomainMax: number;
  /** JSON length of userData. */
  userDataBytesMax: number;
}

export const DEFAULT_DOMAIN_LIMITS: DomainLimits = { filtersPerDomainMax: 64, userDataBytesMax: 65_536 };

/** A filter compiled once per version of its domain. */
export interface CompiledFilter {
  /** The type's name (in the domain's tenant). */
  type: string;
  accepts(instance: unknown): boolean;
}

/**
 * Parses and checks a PUT body: `{ contributorFilters: [ { contributor, query } ], userData? }`.
 * A body holding one `{ contributor, query }` instead of the array is read as a one-filter
 * domain (the spec shows that shape once). Each filter's type must be of `tenant`; a query
 * that does not compile is a 400 naming the filter and the place in the query.
 */
export function parseDomain(body: unknown, tenant: string, limits: DomainLimits = DEFAULT_DOMAIN_LIMITS): { document: DomainDocument; filters: CompiledFilter[] } {
  if (!isPlainObject(body)) throw new BadRequestError(`body must be { contributorFilters: [ { contributor, query } ], userData? }, got ${jsonTypeName(body)}`);
  const rawFilters = body.contributorFilters ?? (body.contributor !== undefined ? [{ contributor: body.contributor, query: body.query }] : undefined);
  if (!Array.isArray(rawFilters)) throw new BadRequestError('contributorFilters must be an array of { contributor, query }');
  if (rawFilters.length > limits.filtersPerDomainMax) throw new BadRequestError(`a domain has at most ${limits.filtersPerDomainMax} contributorFilters, got ${rawFilters.length}`);
  const contributorFilters = rawFilters.map((filter, index) => parseFilter(filter, `contributorFilters[${index}]`, tenant));
  const document: DomainDocument = { contributorFilters };
  if (body.userData !== undefined && body.userData !== null) {
    if (!isPlainObject(body.userData)) throw new BadRequestError(`userData must be an object, got ${jsonTypeName(body.userData)}`);
    if (stringifyJson(body.userData).length > limits.userDataBytesMax) throw new BadRequestError(`userData is at most ${limits.userDataBytesMax} characters of JSON`);
    document.userData = body.userData;
  }
  return { document, filters: compileFilters(document, tenant) };
}

/** Compiles a stored domain's filters (it was checked when it was stored). */
export function compileFilters(document: DomainDocument, tenant: string): CompiledFilter[] {
  return document.contributorFilters.map((filter, index) => {
    const where = `contributorFilters[${index}]`;
    const type = filterType(filter.contributor, where, tenant);
    if (filter.query.trim() === '') return { type, accepts: () => true };
    let evaluator: Evaluator;
    try {
      evaluator = compileExpression(filter.query);
    } catch (error) {
      if (error instanceof ExpressionError) throw new BadRequestError(`${where}.query: ${error.message}`, { details: error.details });
      throw error;
    }
    return { type, accepts: (instance) => matches(evaluator, instance) };
  });
}

/**
 * The contributors a domain holds: for each filter's type, the instances whose document its
 * query matches. Filters are alternatives: an instance is in the domain when any filter of
 * its type matches it. Every filtered type has an entry, empty or not, in filter order.
 */
export function matchContributors(
  filters: readonly CompiledFilter[],
  instancesOf: (type: string) => Iterable<[id: string, document: unknown]>,
): Map<string, Set<string>> {
  const byType = new Map<string, Set<string>>();
  for (const filter of filters) {
    const ids = byType.get(filter.type) ?? new Set<string>();
    byType.set(filter.type, ids);
    for (const [id, document] of instancesOf(filter.type)) {
      if (!ids.has(id) && filter.accepts(document)) ids.add(id);
    }
  }
  return byType;
}

export function filterTypeUri(tenant: string, type: string): string {
  return contributorTypeUri(tenant, type);
}

/** `/domain/<tenant>/<collection>/<name>`: how search requests and sessions name a domain. */
export function parseDomainUri(value: unknown): { tenant: string; collection: string; name: string } {
  const parts = typeof value === 'string' ? value.split('/') : [];
  if (parts.length !== 5 || parts[0] !== '' || parts[1] !== 'domain') {
    throw new BadRequestError(`domain must be a domain URI (/domain/<tenant>/<collection>/<name>), got ${typeof value === 'string' ? `'${value.slice(0, 200)}'` : jsonTypeName(value)}`);
  }
  return { tenant: checkName('tenant', parts[2]), collection: checkName('collection', parts[3]), name: checkName('domain', parts[4]) };
}

function parseFilter(raw: unknown, where: string, tenant: string): ContributorFilter {
  if (!isPlainObject(raw)) throw new BadRequestError(`${where} must be { contributor, query }, got ${jsonTypeName(raw)}`);
  if (typeof raw.contributor !== 'string') throw new BadRequestError(`${where}.contributor must be a contributor type URI (/contributors/<tenant>/<type>)`);
  filterType(raw.contributor, `${where}.contributor`, tenant);
  const query = raw.query === undefined || raw.query === null ? '' : raw.query;
  if (typeof query !== 'string') throw new BadRequestError(`${where}.query must be a string (an expression), got ${jsonTypeName(query)}`);
  return { contributor: raw.contributor, query };
}

function filterType(contributor: string, where: string, tenant: string): string {
  const uri = parseContributorTypeUri(contributor, where);
  if (uri.tenant !== undefined && uri.tenant !== tenant) {
    throw new BadRequestError(`${where}: contributor type of tenant '${uri.tenant}'; a domain of tenant '${tenant}' filters its own types`);
  }
  return uri.type;
}
