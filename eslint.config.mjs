import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'coverage/**', 'test/fixtures/**/dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
      'no-restricted-syntax': ['error',
        { selector: "CallExpression[callee.name='eval']", message: 'No eval: expressions go through our own evaluator.' },
        { selector: "NewExpression[callee.name='Function']", message: 'No new Function.' }],
    },
  },
  {
    files: ['functions/**/*.ts', 'orchestrations/**/*.ts', 'lib/**/*.ts'],
    ignores: ['lib/runtime/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/runtime', '**/runtime/**'], message: 'The app must run unchanged under the real Functions host: only lib/runtime may import lib/runtime.' }] }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' } },
  },
);
