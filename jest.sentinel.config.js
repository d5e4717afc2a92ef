// Redis Sentinel tests (`npm run test:sentinel`): each file starts its own local master, replica
// and three sentinels from the redis-server and redis-sentinel binaries
// (test/support/redis-sentinel.ts), so there is no shared-Redis globalSetup, and files run one
// at a time (some members are killed on purpose).
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/sentinel/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: undefined,
  globalTeardown: undefined,
  maxWorkers: 1,
  testTimeout: 120_000,
};
