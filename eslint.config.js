// @ts-check
/**
 * The lint step (issue 40 §6): a few rules that matter here, not a style guide (Prettier formats).
 *
 * - Floating promises: a promise nobody awaits loses its error (an unhandled rejection ends the
 *   process) and its ordering (a write that may land after the response). `void` marks one left
 *   running on purpose, with a comment saying why.
 * - No Knex transaction outside runtime/storage/: a write goes through the database's own door
 *   (`write` in storage/transactions.ts, `Database.write`), which on SQLite makes it a savepoint
 *   in the group commit's batch shared with other requests, acknowledged once on disk; a
 *   `knex.transaction` of its own would take the one writer for itself, outside the batches.
 *   TRANSACTION_CALLERS lists the callers allowed, and it only shrinks.
 * - Imports across layers: generated code imports only runtime/public.ts (and other generated
 *   files, and Knex for its types), and the runtime never imports the generator or the tests. The
 *   whole rank table stays in test/generator/layers.test.ts (RANKS), the one place it is kept.
 *
 * Typed rules read the program of tsconfig.json, so .ts files only; the few .js files (bin/,
 * scripts/) get the rules that need no types.
 */
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/**
 * Files outside runtime/storage/ allowed to call `.transaction(`: none. Every transaction is opened
 * through the database's own API, `write` in runtime/storage/transactions.ts (issue 40 §5).
 */
const TRANSACTION_CALLERS = [];

export default defineConfig([
  {
    // Not our code: what runs make (bundles, results, scratch), the farm's own site folder, and
    // test fixtures, which are data (a licence file among them).
    ignores: [
      '.cache/',
      'site/',
      'dist/',
      'coverage/',
      'bench/results/',
      'bench/.data/',
      '.tilth-test-*/',
      'stress-results/',
      'test/fixtures/',
    ],
  },
  {
    // Generated files open with a blanket `eslint-disable`, and only a few rules run: a directive
    // that disables nothing is not worth a warning.
    linterOptions: { reportUnusedDisableDirectives: 'off' },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's top-level test() and describe() return promises the runner itself awaits.
          // A subtest (t.test) is not on this list: one not awaited is cancelled with its parent.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
    },
  },
  {
    files: ['runtime/**/*.ts', 'generator/**/*.ts'],
    ignores: ['runtime/storage/**', ...TRANSACTION_CALLERS],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[property.name="transaction"]',
          message:
            'A Knex transaction outside runtime/storage/ (issue 40 §5): on SQLite it would take the one writer outside the group commit. Use write() from runtime/storage/transactions.ts (or Database.write / Database.read) instead.',
        },
      ],
    },
  },
  {
    files: ['generated/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?:\\.\\./)+(?:runtime/(?!public\\.ts$)|generator/|test/|bench/|scripts/)',
              message:
                'Generated code imports only runtime/public.ts, other generated files and Knex (ARCHITECTURE.md).',
            },
            {
              regex: '^(?![./]|knex$)',
              message: 'Generated code imports no package but Knex, for its types (ARCHITECTURE.md).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['runtime/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?:\\.\\./)+(?:generator|test|bench|scripts)/',
              message:
                'The runtime never imports the generator, the tests, the bench or the scripts (ARCHITECTURE.md).',
            },
          ],
        },
      ],
    },
  },
]);
