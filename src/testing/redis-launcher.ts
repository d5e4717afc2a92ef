/**
 * The Redis launcher: the one home of the code that finds or starts a Redis for tests and local
 * runs. `startTestRedis()` (nestjs-work-queue/testing) is built on it, and so are the project's
 * own test harness (test/support/redis-server.ts, test/support/global-setup.cts) and `npm start`
 * (sample/start.ts, through tools/redis-server.ts).
 *
 * - `launchRedisServer()` (launcher/process.ts) starts a private `redis-server` on 127.0.0.1 (a
 *   free port, a fresh temp dir, no persistence), waits until it answers PING, and stops it on
 *   `dispose()`.
 * - `acquireSharedRedis()` (launcher/shared.ts) picks ONE Redis: `REDIS_URL` if set, else a
 *   Docker engine via testcontainers (only if one is reachable), else the local `redis-server`.
 * - launcher/common.ts: the "no Redis" error, binary lookup, free port, raw PING.
 *
 * Jest's globalSetup loads this as CommonJS; test/support/resolve-ts.ts maps its `./x.js`
 * imports to the `.ts` sources there.
 */
export * from './launcher/common.js';
export * from './launcher/process.js';
export * from './launcher/shared.js';
