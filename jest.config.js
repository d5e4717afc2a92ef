// Jest 30 in native ESM mode: run through `node --experimental-vm-modules` (see package.json).
// TypeScript is compiled by @swc/jest with legacy decorators + decorator metadata (needed by Nest DI).

/** @type {import('@swc/core').Options} */
const swcOptions = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    keepClassNames: true,
  },
  // @swc/jest picks `module.type` itself: es6 for test files (ESM), commonjs where Jest
  // requires synchronously (e.g. globalSetup/globalTeardown).
  sourceMaps: 'inline',
};

/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  rootDir: '.',
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/coverage/'],
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // Redis Cluster and Sentinel tests start their own: `npm run test:cluster` / `test:sentinel`.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/cluster/', '<rootDir>/test/sentinel/'],
  moduleFileExtensions: ['ts', 'cts', 'js', 'mjs', 'cjs', 'json'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.c?ts$': ['@swc/jest', swcOptions] },
  globalSetup: '<rootDir>/test/support/global-setup.cts',
  globalTeardown: '<rootDir>/test/support/global-teardown.cts',
  testTimeout: 30000,
  // Tests run in band on small machines: when a test fails, its open handles (a worker it never
  // closed, a client of a server it killed) can keep the process alive for good, and CI would
  // wait for its own time limit instead of failing at once. End the run when the tests are done
  // (the Sentinel config inherits this).
  forceExit: true,
};
