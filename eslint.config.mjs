import tseslint from 'typescript-eslint';
import boundaries from 'eslint-plugin-boundaries';

/**
 * The rooms of the house, from the ground up (docs/architecture.md draws them). A room may import its own
 * files and the rooms listed under it in ROOM_IMPORTS; anything else fails `npm run lint` with the rule
 * `boundaries/dependencies`, naming both rooms. lib/runtime stands apart: only it may import itself.
 */
const ROOMS = [
  ['core', ['lib/core/**']],
  ['storage', ['lib/storage/**']],
  ['telemetry', ['lib/telemetry/**']],
  ['secrets', ['lib/secrets/**']],
  ['auth', ['lib/auth/**']],
  ['audit', ['lib/audit/**']],
  ['config', ['lib/config/**']],
  ['expression', ['lib/expression/**']],
  ['connectors', ['lib/connectors/**']],
  ['mesh', ['lib/mesh/**']],
  ['plans', ['lib/plans/**']],
  ['sync', ['lib/sync/**']],
  ['instances', ['lib/instances/**']],
  ['runs', ['lib/runs/**']],
  ['schedules', ['lib/schedules/**']],
  ['console', ['lib/console/**']],
  ['api', ['lib/api/**', 'lib/schemas/**', 'lib/http/**']],
  ['scim', ['lib/scim/**']],
  ['app', ['functions/**', 'orchestrations/**']],
  ['runtime', ['lib/runtime/**']],
  ['cli', ['lib/cli/**']],
];

const below = (...rooms) => rooms;
const BASE = below('core');
const LOWER = [...BASE, 'storage', 'telemetry', 'secrets', 'auth', 'audit', 'config'];
/** What each room may import besides itself. */
const ROOM_IMPORTS = {
  core: [],
  storage: BASE,
  telemetry: [...BASE, 'storage'],
  secrets: [...BASE, 'storage'],
  auth: [...BASE, 'storage', 'telemetry'],
  audit: [...BASE, 'storage', 'telemetry', 'auth'],
  config: [...BASE, 'storage', 'telemetry', 'secrets', 'auth', 'audit'],
  expression: BASE,
  connectors: [...LOWER, 'expression'],
  mesh: [...LOWER, 'expression', 'connectors'],
  plans: [...LOWER, 'expression', 'connectors', 'mesh'],
  sync: [...LOWER, 'expression', 'connectors', 'mesh', 'plans'],
  instances: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync'],
  runs: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync', 'instances'],
  schedules: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync', 'instances', 'runs'],
  console: BASE,
  api: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync', 'instances', 'runs', 'schedules'],
  scim: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync', 'instances', 'runs', 'schedules', 'api'],
  app: [...LOWER, 'expression', 'connectors', 'mesh', 'plans', 'sync', 'instances', 'runs', 'schedules', 'api', 'scim', 'console'],
  runtime: [],
  cli: [],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'coverage/**', 'test/fixtures/**/dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.name='eval']", message: 'No eval: expressions go through our own evaluator.' },
        { selector: "NewExpression[callee.name='Function']", message: 'No new Function.' },
      ],
    },
  },
  {
    files: ['functions/**/*.ts', 'orchestrations/**/*.ts', 'lib/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/elements': ROOMS.flatMap(([type, patterns]) => patterns.map((pattern) => ({ type, pattern, partialMatch: false }))),
      'import/resolver': { node: { extensions: ['.ts', '.js'] } },
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          message: 'Arrows point down only: the room {{from.type}} may not import the room {{to.type}}. Move the helper down, or see docs/architecture.md.',
          policies: Object.entries(ROOM_IMPORTS).map(([room, allowed]) => ({
            from: { element: { type: room } },
            allow: { to: { element: { types: { anyOf: [room, ...allowed] } } } },
          })),
        },
      ],
    },
  },
  {
    files: ['functions/**/*.ts', 'orchestrations/**/*.ts', 'lib/**/*.ts'],
    ignores: ['lib/runtime/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/runtime', '**/runtime/**'],
              message: 'The app must run unchanged under the real Functions host: only lib/runtime may import lib/runtime.',
            },
          ],
        },
      ],
    },
  },
  {
    // One logger: lib/core/log.ts writes to the console for everything outside an invocation.
    files: ['lib/**/*.ts'],
    ignores: ['lib/runtime/**', 'lib/core/log.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } },
  },
);
