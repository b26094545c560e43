/** Jest runs the TypeScript sources through ts-jest as ES modules. Type checking happens once
 * in `npm run typecheck` (part of pretest), so the transform here only transpiles.
 *
 * Timeouts are sized for a busy 2-core machine: 60 s per test by default; tests that spawn
 * processes pass SPAWN_TIMEOUT_MS (test/helpers/wait.ts, 120 s) themselves. A deadline only bounds
 * a failure: passing tests wait on events, never on the clock.
 *
 * The test environment is Node's plus cleanup when a file ends (test/helpers/jest-environment.mjs):
 * kernels left open are shut down, child processes killed, and every tempDir() folder removed. */
export default {
  testEnvironment: '<rootDir>/test/helpers/jest-environment.mjs',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.test.json' }],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  modulePathIgnorePatterns: ['<rootDir>/dist/'],
  testTimeout: 60_000,
};
