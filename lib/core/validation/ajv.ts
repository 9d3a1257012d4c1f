import Ajv2020 from 'ajv/dist/2020';
import type { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';
import { SettingsReader } from '../config';
import { AppError, type FieldError } from '../errors';

/**
 * The one Ajv instance of the service (JSON Schema 2020-12, the dialect of OpenAPI 3.1). Every request schema is a TypeBox schema with an `$id`, added here
 * once at load (`defineSchema`) and compiled once, at load (on first use with the Development test hook
 * below); the OpenAPI document (lib/api/openapi.ts) is generated from the same registered schemas, so
 * validation and documentation cannot drift.
 *
 * - `allErrors`: a 400 lists every offending field, not only the first.
 * - `useDefaults`: documented defaults (`priority: 100`, `isEnabled: true`...) are filled in by validation.
 * - `coerceTypes: false`: `"5"` is not a number; wrong types are a 400.
 * - `strict`: an unknown keyword in one of our schemas is a programming error caught at load.
 */
export const ajv = new Ajv2020({ allErrors: true, useDefaults: true, coerceTypes: false, strict: true, allowUnionTypes: true });
addFormats(ajv);

/** Marks a configuration field whose value is a secret: encrypted at rest, never returned (lib/secrets). */
ajv.addKeyword({ keyword: 'x-secret', schemaType: 'boolean' });
/**
 * Marks a configuration field that says where or as whom a connector connects: changing it on a PUT requires
 * every secret to be sent again (lib/secrets/fields.ts `endpointPaths`).
 */
ajv.addKeyword({ keyword: 'x-endpoint', schemaType: 'boolean' });
/**
 * Marks a dictionary of attribute name to value (a deprovisioning's `disableAttributes`): the value of a secret
 * attribute in it (lib/core/secretAttributes.ts, e.g. a scrambled `userPassword`) is a secret like `x-secret`.
 */
ajv.addKeyword({ keyword: 'x-attribute-values', schemaType: 'boolean' });
/** OpenAPI annotations carried by schemas; Ajv ignores them. */
ajv.addKeyword({ keyword: 'x-summary', schemaType: 'string' });

const registered = new Map<string, TSchema>();
const compiled = new Map<string, ValidateFunction>();

/**
 * `Validation:TestHooks:CompileOnFirstUse` (TEST ONLY, honoured in Development only): a schema is registered at
 * load but compiled when it first validates, so a test service that answers a handful of routes does not
 * compile the ~140 schemas of the whole API at every start (about 0.7 s of CPU). Outside Development, or unset,
 * every schema is compiled at load and a schema that does not compile stops the load.
 */
const compileOnFirstUse = (() => {
  const settings = new SettingsReader();
  return settings.isDevelopment() && settings.bool('Validation:TestHooks:CompileOnFirstUse', false);
})();

/**
 * Register a schema (it must have an `$id`) with the one Ajv instance and compile it now (with the test hook
 * above, when it first validates). Returns the schema.
 */
export function defineSchema<T extends TSchema>(schema: T): T {
  const id = schema.$id;
  if (!id) throw new Error('defineSchema: the schema needs an $id.');
  if (registered.has(id)) {
    if (registered.get(id) !== schema) throw new Error(`defineSchema: a different schema already has $id '${id}'.`);
    return schema;
  }
  ajv.addSchema(schema);
  if (!compileOnFirstUse) compile(id);
  registered.set(id, schema);
  return schema;
}

/** Compile the added schema `id` (once). A schema that does not compile is removed again: the next define reports the same error. */
function compile(id: string): ValidateFunction {
  let fn = compiled.get(id);
  if (fn) return fn;
  try {
    fn = ajv.getSchema(id);
  } finally {
    if (!fn) {
      ajv.removeSchema(id);
      registered.delete(id);
    }
  }
  if (!fn) throw new Error(`Ajv has no schema with $id '${id}'.`);
  compiled.set(id, fn);
  return fn;
}

/** Every schema registered so far, by `$id` (the OpenAPI generator reads these). */
export function registeredSchemas(): ReadonlyMap<string, TSchema> {
  return registered;
}

/** The registered schema with this `$id`, or undefined. */
export function schemaById(id: string): TSchema | undefined {
  return registered.get(id);
}

/**
 * Validate `data` against a registered schema (defaults are applied in place) and return it typed.
 * Throws a 400 `validation_failed` AppError listing `errors: [{ path, message }]`; `pathPrefix` is prepended
 * to every path (a connector's config is validated on its own and reported under `/config`).
 */
export function validate<T extends TSchema>(schema: T, data: unknown, options: { pathPrefix?: string; detail?: string } = {}): Static<T> {
  const errors = schemaErrors(schema, data, options.pathPrefix);
  if (!errors.length) return data as Static<T>;
  throw new AppError('validation_failed', options.detail ?? 'The request is not valid. See errors for each field.', { errors });
}

/** `validate` without the throw: the field errors of `data` (defaults applied in place), empty when it is valid. */
export function schemaErrors(schema: TSchema, data: unknown, pathPrefix = ''): FieldError[] {
  const fn = compiled.get(schema.$id ?? '') ?? defineAndGet(schema);
  return fn(data) ? [] : toFieldErrors(fn.errors ?? [], pathPrefix);
}

function defineAndGet(schema: TSchema): ValidateFunction {
  defineSchema(schema);
  return compile(schema.$id!);
}

/**
 * Ajv errors as the API's `{ path, message }`: `path` is a JSON pointer of the offending field (for a missing
 * or unknown property, the property itself). Errors that only say "a subschema failed" (if/then, anyOf
 * wrappers) are dropped when a more specific error is present.
 */
export function toFieldErrors(errors: ErrorObject[], pathPrefix = ''): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  const wrappers = new Set(['if', 'anyOf', 'oneOf', 'allOf', 'not']);
  errors = mergeAlternatives(errors);
  const specific = errors.filter((e) => !wrappers.has(e.keyword));
  for (const e of specific.length ? specific : errors) {
    let path = e.instancePath;
    let message = e.message ?? 'is not valid';
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'required') {
      path += '/' + escapePointer(String(params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      path += '/' + escapePointer(String(params.additionalProperty));
      message = 'is not a known property';
    } else if (e.keyword === 'type') {
      message = `must be ${String(params.type).split(',').join(' or ')}`;
    } else if (e.keyword === 'false schema') {
      message = 'is not allowed here';
    } else if (e.keyword === 'enum') {
      message = `must be one of: ${(params.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
    } else if (e.keyword === 'dependentRequired' || e.keyword === 'dependencies') {
      path += '/' + escapePointer(String(params.missingProperty));
      message = `is required when ${String(params.property)} is set`;
    }
    const full = pathPrefix + path || '/';
    const key = `${full}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path: full, message });
  }
  return out.slice(0, 50);
}

/**
 * A choice of literal values (TypeBox `Union([Literal('ldaps'), Literal('starttls'), ...])`, an `anyOf` of
 * `const` branches, possibly made nullable) fails with one "must be equal to constant" per branch, which
 * does not tell the caller what is allowed. Such an `anyOf`/`oneOf` and its branch errors become one `enum`
 * error listing every allowed value. A choice whose branches are not all values is left as it is.
 */
function mergeAlternatives(errors: ErrorObject[]): ErrorObject[] {
  const consumed = new Set<ErrorObject>();
  const merged = new Map<ErrorObject, ErrorObject>();
  const choices = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const choice of choices) {
    if (consumed.has(choice)) continue;
    const prefix = choice.schemaPath + '/';
    const inside = errors.filter((e) => e !== choice && e.schemaPath.startsWith(prefix));
    const branches = new Map<string, ErrorObject[]>();
    for (const e of inside) {
      const branch = e.schemaPath.slice(prefix.length).split('/')[0];
      branches.set(branch, [...(branches.get(branch) ?? []), e]);
    }
    const allowed: unknown[] = [];
    const isChoiceOfValues =
      branches.size > 0 &&
      inside.every((e) => e.instancePath === choice.instancePath) &&
      [...branches.values()].every((list) => {
        const values = list.flatMap((e) =>
          e.keyword === 'const' ? [e.params.allowedValue] : e.keyword === 'enum' ? (e.params.allowedValues as unknown[]) : [],
        );
        if (values.length === 0 && list.length === 1 && list[0].keyword === 'type' && list[0].params.type === 'null') values.push(null);
        allowed.push(...values);
        return values.length > 0;
      });
    if (!isChoiceOfValues) continue;
    for (const e of inside) consumed.add(e);
    merged.set(choice, { ...choice, keyword: 'enum', params: { allowedValues: [...new Set(allowed)] }, message: 'must be one of the allowed values' });
  }
  return errors.filter((e) => !consumed.has(e)).map((e) => merged.get(e) ?? e);
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
