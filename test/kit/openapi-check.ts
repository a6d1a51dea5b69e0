// Checks real answers (and request bodies) against an OpenAPI 3.1 document a node serves:
// the status is declared for the operation, the media type too, and a JSON body matches
// the declared schema (Ajv, draft 2020-12). Remembers what it checked, so a test can ask
// whether every operation was answered.

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export class OpenApiCheck {
  private readonly ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    allErrors: true,
    formats: { uuid: UUID, 'date-time': (text: string) => !Number.isNaN(Date.parse(text)), uri: true },
  });
  /** `METHOD template status` of every answer checked. */
  readonly exercised = new Set<string>();

  constructor(readonly document: any) {
    this.ajv.addVocabulary(['openapi', 'info', 'tags', 'paths', 'components', 'example']);
    this.ajv.addSchema({ ...document, $id: 'openapi' }, undefined, undefined, false);
  }

  /** The compiled schema at a JSON pointer of the document, given as its parts. */
  schemaAt(...parts: string[]): ValidateFunction {
    const pointer = parts.map((part) => encodeURIComponent(part.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');
    const validate = this.ajv.getSchema(`openapi#/${pointer}`);
    expect(validate, parts.join(' ')).toBeDefined();
    return validate as ValidateFunction;
  }

  /** The body is one the operation's requestBody schema accepts. */
  expectRequest(method: string, template: string, body: unknown): void {
    const validate = this.schemaAt('paths', template, method.toLowerCase(), 'requestBody', 'content', 'application/json', 'schema');
    expect(validate(body), `request of ${method} ${template}: ${JSON.stringify(validate.errors)}`).toBe(true);
  }

  /**
   * The answer is one the document declares for this operation, in status, media type and
   * schema. Without `answer.text` (a stream read only to its headers) the body is not checked.
   */
  expectAnswer(method: string, template: string, answer: Pick<Answer, 'status' | 'headers'> & Partial<Answer>): void {
    const operation = this.document.paths[template]?.[method.toLowerCase()];
    expect(operation, `${method} ${template} is in the document`).toBeDefined();
    const status = String(answer.status);
    let declared = operation.responses[status];
    expect(declared, `${method} ${template} declares ${status}`).toBeDefined();
    this.exercised.add(`${method} ${template} ${status}`);
    let at = ['paths', template, method.toLowerCase(), 'responses', status];
    if (declared.$ref !== undefined) {
      const name = declared.$ref.split('/').pop();
      declared = this.document.components.responses[name];
      at = ['components', 'responses', name];
    }
    if (declared.content === undefined) {
      expect(answer.text ?? '', `${method} ${template} ${status} has no body`).toBe('');
      return;
    }
    const mediaType = answer.headers.get('content-type')!.split(';')[0]!;
    const declaredType = Object.keys(declared.content).find((type) => type === mediaType || type === '*/*');
    expect(declaredType, `${method} ${template} ${status} is ${mediaType}`).toBeDefined();
    if (!mediaType.endsWith('json') || answer.text === undefined) return;
    const validate = this.schemaAt(...at, 'content', declaredType!, 'schema');
    expect(validate(answer.json), `${method} ${template} ${status}: ${JSON.stringify(validate.errors)}\n${answer.text.slice(0, 500)}`).toBe(true);
  }

  /** Operations of the document never answered with a 2xx. */
  neverSucceeded(): string[] {
    const operations = Object.entries(this.document.paths).flatMap(([path, methods]) => Object.keys(methods as object).map((method) => `${method.toUpperCase()} ${path}`));
    const succeeded = new Set([...this.exercised].filter((entry) => /\s2\d\d$/.test(entry)).map((entry) => entry.replace(/\s\d+$/, '')));
    return operations.filter((operation) => !succeeded.has(operation));
  }
}
