// Which repository persists a stream (spec, "Repository mapping"). No mapping: not persisted.

import { isPlainObject } from '../json.js';
import { BadRequestError } from '../errors.js';
import { REPOSITORY_NAMES, type RepositoryName } from '../storage/repository.js';

export interface RepositoryMapping {
  name: RepositoryName;
  config: Record<string, unknown>;
}

export function parseRepositoryMapping(body: unknown): RepositoryMapping {
  if (!isPlainObject(body)) throw new BadRequestError('repository mapping must be a JSON object { name, config }');
  const name = body.name;
  if (typeof name !== 'string' || !(REPOSITORY_NAMES as readonly string[]).includes(name)) {
    throw new BadRequestError(
      `repository name must be one of ${REPOSITORY_NAMES.join(', ')}, got ${JSON.stringify(name) ?? 'nothing'}`,
    );
  }
  const config = body.config ?? {};
  if (!isPlainObject(config)) throw new BadRequestError('repository config must be a JSON object');
  if (name === 'ssr' && config.defaultStringAnalyzer !== undefined && typeof config.defaultStringAnalyzer !== 'string') {
    throw new BadRequestError('config.defaultStringAnalyzer must be a string');
  }
  return { name: name as RepositoryName, config };
}
