// The OpenAPI 3.1 document of /api/v1, served at /api/v1/openapi.json and
// rendered at /api/v1/docs. It is written by hand next to the code it describes; tests check
// that every route of the router is in it (and nothing else), that it is a valid OpenAPI 3.1
// document, and that the responses the server sends match its schemas.

import { ACCOUNT_NAME_PATTERN, TOKEN_BYTES, TOKEN_PREFIX } from './accounts.js';
import { DESCRIPTION_CHARS_MAX, NAME_CHARS_MAX } from './brains.js';
import { PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE, PROBLEMS, type ProblemCode } from './problems.js';

const DESCRIPTION = `
The brain management interface: create, list, read, update and soft-delete brains, and list
the templates that seed a new brain's neuron types. Searching and recording knowledge is the
agent protocol's job, not this interface's.

**Authentication.** \`Authorization: Bearer <token>\` with a service account's token (the same
token the agent protocol takes). Tokens are made with the accounts CLI
(\`npm run accounts -- create NAME\`); they are \`${TOKEN_PREFIX}\` followed by ${TOKEN_BYTES} random bytes
in base64url, shown once, and stored only as SHA-256 hashes.

**Two gates, both closed by default.** The hive-wide switch (config \`brainApi.enabled\`, or the
CLI's \`api-enable\` / \`api-disable\`, which is stored for the whole cluster and then wins over
the config) and the account's \`api_access_enabled\` (CLI \`grant-api\` / \`revoke-api\`). A missing,
unknown or revoked token is **401** with \`WWW-Authenticate: Bearer\`; a valid token with a closed
gate is **403** (\`api-disabled\` is checked before \`api-access-not-granted\`).

**Visibility.** An account sees and acts on the brains it created; any other brain id is 404.

**Licence.** The tier and the allowance are one setting for the whole cluster: the first
node's config when the cluster is born, then only what an administrator sets
(\`PATCH /api/v1/admin/licence\`); a joining node's config changes neither. One pool of
\`brainAllowance\` brains for the whole cluster. A create
beyond it is **402** \`licence-brain-allowance-exceeded\`; soft-deleted brains give their
slot back. On the \`free\` tier, setting \`auditEnabled\` or \`advancedSecurityEnabled\` to true is
**402** \`licence-feature-unavailable\`, on create and on PATCH (setting them false is allowed).

**Errors.** Every error is an RFC 7807 \`${PROBLEM_CONTENT_TYPE}\` document with \`type\`
(\`${PROBLEM_TYPE_BASE}<code>\`), \`title\` (fixed per type), \`status\`, \`detail\` and
\`instance\` (the request path); some add extension members. Request bodies are JSON
(another Content-Type is 415, too large is 413, malformed is 400).

**Administration** (\`/api/v1/admin\`) is for the accounts CLI: \`Authorization: Bearer <admin
secret>\` with the node's \`adminSecret\`; a node without one answers 403 \`admin-disabled\`.
`.trim();

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ 'application/json': { schema } });

function problem(...codes: ProblemCode[]) {
  const status = PROBLEMS[codes[0]!].status;
  const description = codes.map((code) => `\`${code}\`: ${PROBLEMS[code].title}`).join('; ');
  const response: Record<string, unknown> = {
    description,
    content: { [PROBLEM_CONTENT_TYPE]: { schema: ref('Problem') } },
  };
  if (status === 401) {
    response.headers = { 'WWW-Authenticate': { description: 'Bearer challenge (RFC 6750)', schema: { type: 'string' } } };
  }
  return [String(status), response] as const;
}

function responses(ok: Record<string, unknown>, ...problems: Array<readonly [string, unknown]>) {
  return { ...ok, ...Object.fromEntries(problems) };
}

const gated = [problem('unauthenticated'), problem('api-disabled', 'api-access-not-granted')] as const;
const admin = [problem('admin-unauthenticated'), problem('admin-disabled')] as const;
const bodyProblems = [problem('invalid-request'), problem('payload-too-large'), problem('unsupported-media-type')] as const;

const brainId = {
  name: 'brainId',
  in: 'path',
  required: true,
  description: 'The brain id (a UUID); anything else is 404.',
  schema: { type: 'string' },
};
const accountName = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: ACCOUNT_NAME_PATTERN.source },
};

const timestamps = {
  createdAt: { type: 'string', format: 'date-time' },
  updatedAt: { type: 'string', format: 'date-time' },
};

const brainProperties = {
  id: { type: 'string', format: 'uuid' },
  name: { type: 'string', minLength: 1, maxLength: NAME_CHARS_MAX },
  description: { type: 'string', maxLength: DESCRIPTION_CHARS_MAX },
  ownerUserId: { type: 'string', format: 'uuid', description: 'The id of the service account that created the brain; not updatable.' },
  brainTemplateId: { type: ['string', 'null'], description: 'The template that seeded the neuron types, if any.' },
  auditEnabled: { type: 'boolean', description: 'Paid feature.' },
  advancedSecurityEnabled: { type: 'boolean', description: 'Paid feature.' },
  neuronTypes: { type: 'array', items: ref('NeuronType'), description: 'Seeded from the template at create; read-only here.' },
  ...timestamps,
};

const schemas: Record<string, Schema> = {
  Problem: {
    type: 'object',
    description: 'RFC 7807 problem details. Extension members may follow (e.g. brainAllowance, brainsUsed, tier).',
    required: ['type', 'title', 'status', 'detail', 'instance'],
    properties: {
      type: {
        type: 'string',
        format: 'uri',
        description: `${PROBLEM_TYPE_BASE}<code>, codes: ${Object.keys(PROBLEMS).join(', ')}; about:blank for a status none of them names.`,
      },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      instance: { type: 'string', description: 'The request path.' },
    },
  },
  NeuronType: {
    type: 'object',
    required: ['name', 'description'],
    additionalProperties: false,
    properties: { name: { type: 'string' }, description: { type: 'string' } },
  },
  Brain: {
    type: 'object',
    required: Object.keys(brainProperties),
    additionalProperties: false,
    properties: brainProperties,
  },
  BrainList: {
    type: 'object',
    required: ['brains'],
    additionalProperties: false,
    properties: { brains: { type: 'array', items: ref('Brain') } },
  },
  BrainCreate: {
    type: 'object',
    required: ['name'],
    description: 'Fields not named here (ownerUserId, id, …) are ignored.',
    properties: {
      name: brainProperties.name,
      description: { ...brainProperties.description, default: '' },
      brainTemplateId: { type: ['string', 'null'], description: 'An id from GET /api/v1/brain-templates; unknown ids are 422.' },
      auditEnabled: { type: 'boolean', default: false, description: 'Paid feature: true on the free tier is 402.' },
      advancedSecurityEnabled: { type: 'boolean', default: false, description: 'Paid feature: true on the free tier is 402.' },
    },
  },
  BrainPatch: {
    type: 'object',
    description: 'Only these fields change; any other field (ownerUserId, id, createdAt, neuronTypes, …) is ignored without an error.',
    properties: {
      name: brainProperties.name,
      description: brainProperties.description,
      auditEnabled: { type: 'boolean', description: 'Paid feature: true on the free tier is 402.' },
      advancedSecurityEnabled: { type: 'boolean', description: 'Paid feature: true on the free tier is 402.' },
    },
  },
  StoredBrain: {
    type: 'object',
    description: 'A brain as stored, soft-deleted or not (administrators).',
    required: [...Object.keys(brainProperties), 'deletedAt'],
    additionalProperties: false,
    properties: { ...brainProperties, deletedAt: { type: ['string', 'null'], format: 'date-time' } },
  },
  BrainTemplate: {
    type: 'object',
    required: ['id', 'name', 'description', 'neuronTypes'],
    additionalProperties: false,
    properties: {
      id: { type: 'string', description: 'Use as brainTemplateId.' },
      name: { type: 'string' },
      description: { type: 'string' },
      neuronTypes: { type: 'array', items: ref('NeuronType') },
    },
  },
  BrainTemplateList: {
    type: 'object',
    required: ['templates'],
    additionalProperties: false,
    properties: { templates: { type: 'array', items: ref('BrainTemplate') } },
  },
  Account: {
    type: 'object',
    required: ['id', 'name', 'apiAccessEnabled', 'permissions', 'status', 'createdAt', 'updatedAt', 'revokedAt'],
    additionalProperties: false,
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      apiAccessEnabled: { type: 'boolean', description: 'api_access_enabled: the per-account gate.' },
      permissions: ref('Permissions'),
      status: { enum: ['active', 'revoked'] },
      ...timestamps,
      revokedAt: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  AccountList: {
    type: 'object',
    required: ['accounts'],
    additionalProperties: false,
    properties: { accounts: { type: 'array', items: ref('Account') } },
  },
  AccountCreate: {
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string', pattern: ACCOUNT_NAME_PATTERN.source } },
  },
  AccountCreated: {
    type: 'object',
    required: ['account', 'token'],
    additionalProperties: false,
    properties: {
      account: ref('Account'),
      token: { type: 'string', description: 'The bearer token: shown this once, stored only as a hash.' },
    },
  },
  Permissions: {
    type: 'object',
    description: 'Levels on tenants of the platform interface (read < write < admin); a level on `system` holds on every tenant.',
    additionalProperties: { enum: ['read', 'write', 'admin'] },
  },
  AccountPatch: {
    type: 'object',
    minProperties: 1,
    description: 'apiAccessEnabled, permissions, or both.',
    properties: {
      apiAccessEnabled: { type: 'boolean' },
      permissions: {
        type: 'object',
        description: 'Tenant name to "read", "write" or "admin"; null removes the grant. Tenants not named keep theirs.',
        additionalProperties: { enum: ['read', 'write', 'admin', null] },
      },
    },
  },
  Settings: {
    type: 'object',
    required: ['apiEnabled', 'source', 'updatedAt'],
    additionalProperties: false,
    properties: {
      apiEnabled: { type: 'boolean', description: 'The hive-wide switch.' },
      source: { enum: ['stored', 'config'], description: 'stored: set by an administrator for the cluster; config: this node\'s brainApi.enabled.' },
      updatedAt: { type: ['string', 'null'], format: 'date-time' },
    },
  },
  SettingsPatch: {
    type: 'object',
    required: ['apiEnabled'],
    properties: { apiEnabled: { type: 'boolean' } },
  },
  LicencePatch: {
    type: 'object',
    minProperties: 1,
    description: 'tier, brainAllowance, or both; stored for the whole cluster.',
    properties: {
      tier: { enum: ['free', 'paid'] },
      brainAllowance: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    },
  },
  Licence: {
    type: 'object',
    required: ['tier', 'brainAllowance', 'brainsUsed'],
    additionalProperties: false,
    properties: {
      tier: { enum: ['free', 'paid'] },
      brainAllowance: { type: 'integer', minimum: 0 },
      brainsUsed: { type: 'integer', minimum: 0, description: 'Slots of the cluster-wide pool in use.' },
    },
  },
};

const bearer = [{ serviceAccount: [] }];
const adminSecret = [{ adminSecret: [] }];

const paths = {
  '/api/v1/brains': {
    get: {
      operationId: 'listBrains',
      tags: ['brains'],
      summary: 'List the brains the caller can see',
      description: 'The brains the calling account created, oldest first; soft-deleted brains are left out.',
      security: bearer,
      responses: responses({ '200': { description: 'The brains', content: json(ref('BrainList')) } }, ...gated),
    },
    post: {
      operationId: 'createBrain',
      tags: ['brains'],
      summary: 'Create a brain owned by the calling account',
      security: bearer,
      requestBody: { required: true, content: json(ref('BrainCreate')) },
      responses: responses(
        {
          '201': {
            description: 'Created',
            headers: { Location: { description: 'The new brain', schema: { type: 'string' } } },
            content: json(ref('Brain')),
          },
        },
        ...bodyProblems,
        ...gated,
        problem('licence-brain-allowance-exceeded', 'licence-feature-unavailable'),
        problem('unknown-brain-template'),
        problem('unavailable'),
      ),
    },
  },
  '/api/v1/brains/{brainId}': {
    parameters: [brainId],
    get: {
      operationId: 'getBrain',
      tags: ['brains'],
      summary: 'Fetch one brain',
      security: bearer,
      responses: responses({ '200': { description: 'The brain', content: json(ref('Brain')) } }, ...gated, problem('not-found')),
    },
    patch: {
      operationId: 'updateBrain',
      tags: ['brains'],
      summary: 'Update whitelisted settings',
      description: 'Changes name, description, auditEnabled and advancedSecurityEnabled; other fields are ignored without an error.',
      security: bearer,
      requestBody: { required: true, content: json(ref('BrainPatch')) },
      responses: responses(
        { '200': { description: 'The brain after the change', content: json(ref('Brain')) } },
        ...bodyProblems,
        ...gated,
        problem('licence-feature-unavailable'),
        problem('not-found'),
      ),
    },
    delete: {
      operationId: 'deleteBrain',
      tags: ['brains'],
      summary: 'Soft-delete a brain',
      description: 'Later reads are 404 and lists leave it out; its record and neuron types stay stored, and its licence slot is given back.',
      security: bearer,
      responses: responses({ '204': { description: 'Deleted' } }, ...gated, problem('not-found')),
    },
  },
  '/api/v1/brain-templates': {
    get: {
      operationId: 'listBrainTemplates',
      tags: ['brain-templates'],
      summary: 'List templates for seeding a brain',
      security: bearer,
      responses: responses({ '200': { description: 'The templates', content: json(ref('BrainTemplateList')) } }, ...gated),
    },
  },
  '/api/v1/openapi.json': {
    get: {
      operationId: 'getOpenApiDocument',
      tags: ['documentation'],
      summary: 'This document',
      security: [],
      responses: { '200': { description: 'The OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  },
  '/api/v1/docs': {
    get: {
      operationId: 'getDocs',
      tags: ['documentation'],
      summary: 'Interactive documentation of this document (Swagger UI, served by the node)',
      security: [],
      responses: { '200': { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
  '/api/v1/admin/accounts': {
    get: {
      operationId: 'listAccounts',
      summary: 'List service accounts',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The accounts', content: json(ref('AccountList')) } }, ...admin),
    },
    post: {
      operationId: 'createAccount',
      summary: 'Create a service account and its token',
      description: 'The token is in this response only. A revoked account\'s name gets a new token and its old id (and brains) back, with API access off.',
      tags: ['admin'],
      security: adminSecret,
      requestBody: { required: true, content: json(ref('AccountCreate')) },
      responses: responses(
        { '201': { description: 'Created', content: json(ref('AccountCreated')) } },
        ...bodyProblems,
        ...admin,
        problem('conflict'),
      ),
    },
  },
  '/api/v1/admin/accounts/{name}': {
    parameters: [accountName],
    get: {
      operationId: 'getAccount',
      summary: 'Fetch one service account',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The account', content: json(ref('Account')) } }, problem('invalid-request'), ...admin, problem('not-found')),
    },
    patch: {
      operationId: 'updateAccount',
      summary: 'Grant or revoke API access (api_access_enabled) and platform permissions',
      tags: ['admin'],
      security: adminSecret,
      requestBody: { required: true, content: json(ref('AccountPatch')) },
      responses: responses({ '200': { description: 'The account', content: json(ref('Account')) } }, ...bodyProblems, ...admin, problem('not-found')),
    },
  },
  '/api/v1/admin/accounts/{name}/revoke': {
    parameters: [accountName],
    post: {
      operationId: 'revokeAccount',
      summary: 'Revoke the account\'s token: it stops working at once',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The account', content: json(ref('Account')) } }, problem('invalid-request'), ...admin, problem('not-found')),
    },
  },
  '/api/v1/admin/settings': {
    get: {
      operationId: 'getSettings',
      summary: 'The hive-wide switch',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The settings', content: json(ref('Settings')) } }, ...admin),
    },
    patch: {
      operationId: 'updateSettings',
      summary: 'Turn the hive-wide switch on or off for the whole cluster',
      tags: ['admin'],
      security: adminSecret,
      requestBody: { required: true, content: json(ref('SettingsPatch')) },
      responses: responses({ '200': { description: 'The settings', content: json(ref('Settings')) } }, ...bodyProblems, ...admin),
    },
  },
  '/api/v1/admin/licence': {
    get: {
      operationId: 'getLicence',
      summary: 'The cluster\'s licence and its pool use',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The licence', content: json(ref('Licence')) } }, ...admin),
    },
    patch: {
      operationId: 'updateLicence',
      summary: 'Change the tier or the brain allowance, for the whole cluster',
      tags: ['admin'],
      security: adminSecret,
      requestBody: { required: true, content: json(ref('LicencePatch')) },
      responses: responses({ '200': { description: 'The licence', content: json(ref('Licence')) } }, ...bodyProblems, ...admin),
    },
  },
  '/api/v1/admin/brains/{brainId}': {
    parameters: [brainId],
    get: {
      operationId: 'inspectBrain',
      summary: 'Any brain as stored, soft-deleted ones included',
      tags: ['admin'],
      security: adminSecret,
      responses: responses({ '200': { description: 'The stored brain', content: json(ref('StoredBrain')) } }, ...admin, problem('not-found')),
    },
  },
};

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Tributary brain management interface', version: '1.0.0', description: DESCRIPTION },
  tags: [
    { name: 'brains', description: 'Brains owned by the calling service account.' },
    { name: 'brain-templates', description: 'Templates that seed the neuron types of a new brain.' },
    { name: 'documentation', description: 'This document and its interactive rendering; no authentication.' },
    { name: 'admin', description: 'For the accounts CLI; authenticated by the node\'s admin secret.' },
  ],
  paths,
  components: {
    schemas,
    securitySchemes: {
      serviceAccount: { type: 'http', scheme: 'bearer', description: 'A service account token (trib_…).' },
      adminSecret: { type: 'http', scheme: 'bearer', description: 'The node\'s adminSecret.' },
    },
  },
} as const;
