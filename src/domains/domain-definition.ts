// Domains (spec, "Domain"): a named group of contributors, given by filters; each filter names
// a contributor type and an expression of the shared expression module that instance documents
// of that type must match. Pure code: parsing, compiling and evaluating; the service feeds it
// the instances.

import { BadRequestError } from '../lib/errors.js';
import { z } from 'zod';
import { jsonTypeName, stringifyJson } from '../lib/json.js';
import { jsonObject, validate } from '../lib/validation.js';
import { checkName } from '../lib/names.js';
import { contributorTypeUri, parseContributorTypeUri } from '../contributors/contributor-schema.js';
import { compileExpression, ExpressionError, matches, type Evaluator } from '../expression/index.js';

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

const contributorFilterSchema = z.object({
  contributor: z.string().describe('A contributor type URI /contributors/<tenant>/<type> of the domain\'s tenant, or a bare type name.'),
  query: z
    .string()
    .nullish()
    .transform((query) => query ?? '')
    .describe("An expression over each instance document of the type (the language of search's query.base); empty or omitted: every instance."),
});

/** The body of PUT /domain/:tenant/:collection/:name, with the limits of one domain. */
export function domainBodySchema(limits: DomainLimits) {
  return z
    .object({
      contributorFilters: z.array(contributorFilterSchema).max(limits.filtersPerDomainMax).optional(),
      // The spec shows the body once with a single filter instead of the array.
      contributor: z.string().optional().describe('With query: one filter, in place of contributorFilters.'),
      query: z.string().nullish(),
      userData: jsonObject('Free-form; stored with the definition.')
        .nullish()
        .refine((userData) => userData === undefined || userData === null || stringifyJson(userData).length <= limits.userDataBytesMax, {
          message: `at most ${limits.userDataBytesMax} characters of JSON`,
        }),
    })
    .transform((body, context): DomainDocument => {
      const contributorFilters = body.contributorFilters ?? (body.contributor === undefined ? undefined : [{ contributor: body.contributor, query: body.query ?? '' }]);
      if (contributorFilters === undefined) {
        context.addIssue({ code: 'custom', path: ['contributorFilters'], message: 'expected an array of { contributor, query }, got nothing' });
        return z.NEVER;
      }
      return body.userData === undefined || body.userData === null ? { contributorFilters } : { contributorFilters, userData: body.userData };
    })
    .meta({
      id: 'DomainBody',
      description: 'A named group of contributors given by filters (spec, "Domain"); filters are alternatives.',
      examples: [{ contributorFilters: [{ contributor: '/contributors/demo/board', query: "region == 'north'" }], userData: { owner: 'ops' } }],
    });
}

const defaultDomainBodySchema = domainBodySchema(DEFAULT_DOMAIN_LIMITS);

/**
 * Parses and checks a PUT body: `{ contributorFilters: [ { contributor, query } ], userData? }`.
 * A body holding one `{ contributor, query }` instead of the array is read as a one-filter
 * domain (the spec shows that shape once). Each filter's type must be of `tenant`; a query
 * that does not compile is a 400 naming the filter and the place in the query.
 */
export function parseDomain(body: unknown, tenant: string, limits: DomainLimits = DEFAULT_DOMAIN_LIMITS): { document: DomainDocument; filters: CompiledFilter[] } {
  const document = validate(limits === DEFAULT_DOMAIN_LIMITS ? defaultDomainBodySchema : domainBodySchema(limits), body);
  document.contributorFilters.forEach((filter, index) => filterType(filter.contributor, `contributorFilters[${index}].contributor`, tenant));
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

function filterType(contributor: string, where: string, tenant: string): string {
  const uri = parseContributorTypeUri(contributor, where);
  if (uri.tenant !== undefined && uri.tenant !== tenant) {
    throw new BadRequestError(`${where}: contributor type of tenant '${uri.tenant}'; a domain of tenant '${tenant}' filters its own types`);
  }
  return uri.type;
}
