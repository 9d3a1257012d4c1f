import type { HttpRequest } from '@azure/functions';
import type { Static, TSchema } from '@sinclair/typebox';
import { AppError, badRequest, notFound, type FieldError } from '../core/errors';
import { schemaErrors, validate } from '../core/validation/ajv';

/** Largest JSON body the Admin API reads (the runtime refuses larger requests with 413 before they get here). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * Deepest nesting of objects and arrays a JSON body may have. Validation, canonical JSON and snapshots walk a
 * body recursively: a body nested thousands deep would overflow the stack there, so it is refused before it
 * is parsed. The deepest real body (a configuration document) is under ten levels.
 */
export const MAX_JSON_DEPTH = 32;

const JSON_MEDIA_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json$/i;

export interface ReadJsonOptions {
  /** No body is read as `{}` (validated by the schema) instead of a 400. */
  optional?: boolean;
  /**
   * The errors of the levels the request schema leaves to a later step (a connector's `config` by its type's
   * schema, a rule's per-type fields and script). Called when the request schema fails, with the parsed body
   * (any shape), so that one 400 lists every error: a wrong top-level field does not hide the others.
   * The later step still checks a body that passes the request schema.
   */
  innerErrors?: (body: unknown) => FieldError[] | Promise<FieldError[]>;
}

/**
 * Read and validate a JSON request body.
 * - A body with a content type other than `application/json` (or `application/*+json`) is 415; a body with no
 *   content type is 415 too: we never guess.
 * - No body at all: 400 when `optional` is false; `undefined` (validated as `{}` if the schema accepts it)
 *   when the body is optional.
 * - Larger than MAX_JSON_BODY_BYTES: 413. Not JSON: 400 `malformed_json`. Schema violations: 400 with errors
 *   (those of `innerErrors` too).
 */
export async function readJson<T extends TSchema>(request: HttpRequest, schema: T, options: ReadJsonOptions = {}): Promise<Static<T>> {
  const text = await readText(request);
  if (text.trim() === '') {
    if (options.optional) return validate(schema, {});
    throw badRequest('A JSON request body is required.', [{ path: '/', message: 'is required' }]);
  }
  checkJsonContentType(request);
  checkJsonDepth(text);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new AppError('malformed_json', 'The request body is not valid JSON.');
  }
  const errors = schemaErrors(schema, data);
  if (!errors.length) return data as Static<T>;
  if (options.innerErrors) {
    const seen = new Set(errors.map((e) => `${e.path}\u0000${e.message}`));
    for (const e of await options.innerErrors(data)) {
      if (!seen.has(`${e.path}\u0000${e.message}`)) errors.push(e);
      seen.add(`${e.path}\u0000${e.message}`);
    }
  }
  throw badRequest('The request is not valid. See errors for each field.', errors.slice(0, 50));
}

async function readText(request: HttpRequest): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_JSON_BODY_BYTES) throw tooLarge();
  let buffer: ArrayBuffer;
  try {
    buffer = await request.arrayBuffer();
  } catch {
    throw badRequest('The request body could not be read.');
  }
  if (buffer.byteLength > MAX_JSON_BODY_BYTES) throw tooLarge();
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer);
  } catch {
    throw new AppError('malformed_json', 'The request body is not valid UTF-8 JSON.');
  }
}

/**
 * 400 when `text` nests objects or arrays deeper than MAX_JSON_DEPTH. One pass over the characters, brackets
 * inside strings skipped, before JSON.parse: nothing recursive ever sees such a body.
 */
export function checkJsonDepth(text: string, max = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max)
        throw badRequest(`The request body nests objects and arrays more than ${max} levels deep; nothing was changed.`, [
          { path: '/', message: `nests more than ${max} levels deep` },
        ]);
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}

function tooLarge(): AppError {
  return new AppError('payload_too_large', `The request body is larger than ${MAX_JSON_BODY_BYTES} bytes.`);
}

function checkJsonContentType(request: HttpRequest): void {
  const header = request.headers.get('content-type');
  const media = header?.split(';')[0].trim() ?? '';
  if (!JSON_MEDIA_TYPE.test(media)) {
    throw new AppError('unsupported_media_type', "The request body must be JSON with 'Content-Type: application/json'.");
  }
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isGuid(value: string): boolean {
  return GUID.test(value);
}

/**
 * The route parameter `name` as a lower-case GUID. A value that is not a GUID cannot name any resource, so
 * it is a 404 (`what` names the resource in the message), not a 400.
 */
export function routeId(request: HttpRequest, name: string, what: string): string {
  const value = request.params[name] ?? '';
  if (!isGuid(value)) throw notFound(`${what} '${truncate(value)}' does not exist.`);
  return value.toLowerCase();
}

/**
 * A GUID path parameter that names a part of a resource (`csObjectId` under a connector): a value that is not a
 * GUID is a 400 naming the parameter (the resource's own id stays a 404, see {@link routeId}).
 */
export function routeGuid(request: HttpRequest, name: string): string {
  const value = request.params[name] ?? '';
  if (!isGuid(value)) throw badRequest(`The path parameter '${name}' must be a GUID, not '${truncate(value)}'.`, [{ path: name, message: 'must be a GUID' }]);
  return value.toLowerCase();
}

function truncate(value: string): string {
  const safe = value.replace(/[^\x20-\x7e]/g, '?');
  return safe.length > 64 ? safe.slice(0, 64) + '...' : safe;
}

/** How one query parameter is read. */
export type QueryParam =
  | { kind: 'int'; min?: number; max?: number; default?: number }
  | { kind: 'guid' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'string'; maxLength?: number };

export type QuerySpec = Record<string, QueryParam>;

type QueryValue<P extends QueryParam> = P extends { kind: 'int'; default: number }
  ? number
  : P extends { kind: 'int' }
    ? number | undefined
    : string | undefined;

export type ParsedQuery<S extends QuerySpec> = { [K in keyof S]: QueryValue<S[K]> };

/** `skip` and `take` as the contract defines them: take defaults to 50, at most 200; skip from 0. */
export const PAGING = {
  skip: { kind: 'int', min: 0, default: 0 },
  take: { kind: 'int', min: 0, max: 200, default: 50 },
} as const satisfies QuerySpec;

/**
 * Parse the query string by `spec`. Parameters not in the spec are ignored (cache busters and tracing
 * parameters are common). A parameter given twice, an empty value, a non-integer, an out-of-range number, a
 * malformed GUID or a value outside its enum is a 400 naming the parameter.
 */
export function parseQuery<S extends QuerySpec>(request: HttpRequest, spec: S): ParsedQuery<S> {
  const out: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const [name, param] of Object.entries(spec)) {
    const values = request.query.getAll(name);
    if (values.length > 1) {
      errors.push({ path: name, message: 'must be given at most once' });
      continue;
    }
    const raw = values[0];
    if (raw === undefined) {
      out[name] = param.kind === 'int' ? param.default : undefined;
      continue;
    }
    const error = readParam(param, raw, (v) => (out[name] = v));
    if (error) errors.push({ path: name, message: error });
  }
  if (errors.length) throw badRequest('The query string is not valid. See errors for each parameter.', errors);
  return out as ParsedQuery<S>;
}

function readParam(param: QueryParam, raw: string, set: (v: unknown) => void): string | undefined {
  switch (param.kind) {
    case 'int': {
      if (!/^-?\d{1,15}$/.test(raw)) return 'must be a whole number';
      const n = Number(raw);
      if (param.min !== undefined && n < param.min) return `must be at least ${param.min}`;
      if (param.max !== undefined && n > param.max) return `must be at most ${param.max}`;
      set(n);
      return undefined;
    }
    case 'guid':
      if (!isGuid(raw)) return 'must be a GUID';
      set(raw.toLowerCase());
      return undefined;
    case 'enum': {
      const hit = param.values.find((v) => v.toLowerCase() === raw.toLowerCase());
      if (!hit) return `must be one of: ${param.values.join(', ')}`;
      set(hit);
      return undefined;
    }
    case 'string':
      if (raw === '') return 'must not be empty';
      if (raw.length > (param.maxLength ?? 256)) return `must be at most ${param.maxLength ?? 256} characters`;
      set(raw);
      return undefined;
  }
}

/** Page an in-memory, already ordered list. */
export function page<T>(items: readonly T[], skip: number, take: number): T[] {
  return items.slice(skip, skip + take);
}
