import { Type } from '@sinclair/typebox';

/**
 * `Validation:TestHooks:CompileOnFirstUse` (lib/core/validation/ajv.ts): honoured only in Development, where a
 * schema compiles when it first validates; anywhere else every schema compiles at load and a broken one stops it.
 */
type AjvModule = typeof import('../../../lib/core/validation/ajv');

function loadWith(env: Record<string, string | undefined>): AjvModule {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
  try {
    let mod!: AjvModule;
    jest.isolateModules(() => {
      mod = jest.requireActual<AjvModule>('../../../lib/core/validation/ajv');
    });
    return mod;
  } finally {
    process.env = saved;
  }
}

// Strict mode refuses an unknown keyword: the schema does not compile.
const broken = () => ({ ...Type.Object({ a: Type.String() }), $id: 'BrokenForHookTest', 'x-not-a-keyword': true });
const fine = () => Type.Object({ name: Type.String({ minLength: 1 }) }, { $id: 'FineForHookTest', additionalProperties: false });

test('outside Development the hook is ignored: a schema that does not compile fails at define', () => {
  const ajv = loadWith({ AZURE_FUNCTIONS_ENVIRONMENT: 'Production', Validation__TestHooks__CompileOnFirstUse: 'true' });
  expect(() => ajv.defineSchema(broken())).toThrow(/unknown keyword/);
  expect(ajv.schemaById('BrokenForHookTest')).toBeUndefined();
});

test('in Development without the hook, a schema that does not compile fails at define', () => {
  const ajv = loadWith({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Validation__TestHooks__CompileOnFirstUse: undefined });
  expect(() => ajv.defineSchema(broken())).toThrow(/unknown keyword/);
});

test('in Development with the hook, a schema compiles when it first validates, and validates as before', () => {
  const ajv = loadWith({ AZURE_FUNCTIONS_ENVIRONMENT: 'Development', Validation__TestHooks__CompileOnFirstUse: 'true' });
  const schema = ajv.defineSchema(broken());
  expect(ajv.schemaById('BrokenForHookTest')).toBe(schema);
  expect(() => ajv.validate(schema, { a: 'x' })).toThrow(/unknown keyword/);
  // Not kept half-registered: the next use reports the same error again.
  expect(() => ajv.validate(schema, { a: 'x' })).toThrow(/unknown keyword/);

  const ok = ajv.defineSchema(fine());
  expect(ajv.validate(ok, { name: 'a' })).toEqual({ name: 'a' });
  expect(ajv.schemaErrors(ok, { name: '', extra: 1 })).toEqual([
    { path: '/extra', message: 'is not a known property' },
    { path: '/name', message: 'must NOT have fewer than 1 characters' },
  ]);
});
