// Redis Cluster tests (`npm run test:cluster`): each file starts its own local 3-master +
// 3-replica cluster from the redis-server binary (test/support/redis-cluster.ts), so there is
// no shared-Redis globalSetup, and files run one at a time (6 servers each, some killed on
// purpose).
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: undefined,
  globalTeardown: undefined,
  maxWorkers: 1,
  testTimeout: 120_000,
  // After the files run in one process, a client of a killed cluster node sometimes keeps
  // the process alive for minutes (not reported by --detectOpenHandles; each file alone exits):
  // end the run when the tests are done rather than hang CI. To be found (see the session notes).
  forceExit: true,
};
