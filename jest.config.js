/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json', isolatedModules: true }] },
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testTimeout: 60000,
  // Three workers on the 2-vCPU CI machine: many suites wait on servers and timers, so a third keeps the CPU busy
  // (BENCHMARKS.md, "CI": 1,065 s of jest against 1,392 s with two).
  maxWorkers: 3,
  // Longest suites first (test/support/durations.json): the run is not left waiting on one long suite at its end.
  testSequencer: '<rootDir>/test/support/sequencer.js',
};
