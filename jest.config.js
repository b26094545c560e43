/** Jest runs the TypeScript sources through ts-jest as ES modules. Type checking happens once
 * in `npm run typecheck` (part of pretest), so the transform here only transpiles.
 *
 * Timeouts are sized for a busy 2-core machine where one node start-up can take seconds: 120 s per
 * test (SPAWN_TIMEOUT_MS in test/helpers/wait.ts), since many tests spawn the CLI; waits inside a
 * test have their own, shorter deadlines that name what was awaited. A deadline only bounds a
 * failure: passing tests wait on events, never on the clock.
 *
 * The test environment is Node's plus cleanup when a file ends (test/helpers/jest-environment.mjs):
 * kernels left open are shut down, child processes killed, and every tempDir() folder removed. */
export default {
  testEnvironment: '<rootDir>/test/helpers/jest-environment.mjs',
  extensionsToTreatAsEsm: ['.ts'],
  // Packs import the kernel by its package name (`memo-kernel/pack`); here that is the source.
  moduleNameMapper: {
    '^memo-kernel$': '<rootDir>/kernel/index.ts',
    '^memo-kernel/pack$': '<rootDir>/kernel/pack.ts',
    '^memo-kernel/mcp$': '<rootDir>/kernel/mcp/index.ts',
    '^memo-kernel/testing$': '<rootDir>/kernel/testing.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.test.json' }],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/docs/'],
  testTimeout: 120_000,
  // Two files at a time, even on 2 cores: most files wait on child processes, PostgreSQL or Chromium,
  // not on the CPU. jest's default (cores - 1) ran this suite one file at a time here: a fresh clone's
  // jest took 1,849 s with 1 worker and 848 s with 2, all green (issue 38; not yet measured under a CPU hog).
  maxWorkers: 2,
  // Longest files first, from jest's own timings or, in a fresh clone, from test/durations.json.
  testSequencer: '<rootDir>/test/helpers/sequencer.mjs',
  // Jest's own report, then the tests that took over 30 s, by name.
  reporters: ['default', '<rootDir>/test/helpers/slow-tests-reporter.mjs'],
};
