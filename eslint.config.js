// Lint: typescript-eslint's type-aware recommended rules over the kernel, packs, tests and benches.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'data/**', 'docs/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `_name` marks a binding kept on purpose (a destructured field dropped, an unused parameter).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // A kernel a newcomer reads in an afternoon (issue 37): no file in kernel/ over 800 lines, none in
    // the core layer (see .dependency-cruiser.cjs) over 600. Split along a seam rather than raise these.
    files: ['kernel/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 800 }] },
  },
  {
    files: ['kernel/{tools,permissions,rate-limit,packs,skills,providers,state}/**/*.ts', 'kernel/kernel-config.ts'],
    rules: { 'max-lines': ['error', { max: 600 }] },
  },
  {
    // Tests read tool results, JSON-RPC messages and audit lines as loosely typed JSON on purpose:
    // the assertions are the type check there.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly' },
    },
  },
  {
    // CommonJS config files of tools (dependency-cruiser reads .dependency-cruiser.cjs).
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
);
