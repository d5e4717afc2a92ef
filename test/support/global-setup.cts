// Jest globalSetup: start (or pick) ONE Redis for the whole run and hand its URL to the test
// workers through process.env.WQ_TEST_REDIS_URL (workers are forked after this runs).
//
// Why `.cts` and an extensionless import: Jest loads globalSetup/globalTeardown with Node's
// CommonJS `require` (through a pirates hook that runs @swc/jest with CommonJS output), NOT
// through Jest's ESM runtime, so `moduleNameMapper` does not apply and a `.js`-suffixed path
// would not resolve. Node's CJS resolver does try the hooked `.ts` extension, so the
// extensionless path works. Anything imported from here is compiled to CommonJS, so it must
// not use `import.meta`, top-level await, or `.js`-suffixed relative imports — hence the
// shared launcher itself (tools/redis-server.ts), not test/support/redis-server.ts, which
// imports it with a `.js` suffix.
import { acquireSharedRedis } from '../../tools/redis-server';

const SHARED_REDIS_KEY = '__WQ_SHARED_REDIS__';

export default async function globalSetup(): Promise<void> {
  const shared = await acquireSharedRedis();
  (globalThis as Record<string, unknown>)[SHARED_REDIS_KEY] = shared;
  process.env.WQ_TEST_REDIS_URL = shared.url;
  process.env.WQ_TEST_REDIS_KIND = shared.kind;
}
