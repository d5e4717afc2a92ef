// The 'nestjs-work-queue/testing' entry: a kit for testing an app that uses the queue — a Redis
// (startTestRedis), a prefix per test (uniquePrefix), the module set up for tests
// (WorkQueueTestingModule), waiting until a queue is idle (whenIdle) and removing a prefix's keys.
// Not loaded by the main entry; `testcontainers` is an optional peer, imported only when a
// Docker engine answers.
export { startTestRedis, type StartTestRedisOptions, type TestRedis } from './start-test-redis.js';
export { uniquePrefix } from './unique-prefix.js';
export { whenIdle, type IdleQueue, type WhenIdleOptions } from './when-idle.js';
export { removeKeys } from './remove-keys.js';
export {
  WORK_QUEUE_TESTING_DEFAULTS,
  WorkQueueTestingModule,
  type WorkQueueTestingOptions,
} from './work-queue-testing.module.js';
