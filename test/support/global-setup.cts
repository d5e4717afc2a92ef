// Jest globalSetup: start (or pick) ONE Redis for the whole run and hand its URL to the test
// workers through process.env.WQ_TEST_REDIS_URL (workers are forked after this runs).
//
// Why `.cts` and an extensionless import: Jest loads globalSetup/globalTeardown with Node's
// CommonJS `require` (through a pirates hook that runs @swc/jest with CommonJS output), NOT
// through Jest's ESM runtime, so `moduleNameMapper` does not apply and a `.js`-suffixed path
// would not resolve. Node's CJS resolver does try the hooked `.ts` extension, so the
// extensionless path works. Anything imported from here is compiled to CommonJS, so it must
// not use `import.meta`, top-level await, or `.js`-suffixed relative imports — hence the
// launcher itself (src/testing/redis-launcher.ts, the testing kit's) and the apt-get step
// (tools/apt-install.ts), both free of relative imports, not tools/redis-server.ts or
// test/support/redis-server.ts, which import them with a `.js` suffix.
import { acquireSharedRedis } from '../../src/testing/redis-launcher';
import { installRedisServer } from '../../tools/apt-install';

const SHARED_REDIS_KEY = '__WQ_SHARED_REDIS__';

export default async function globalSetup(): Promise<void> {
  const shared = await acquireSharedRedis({ install: installRedisServer });
  (globalThis as Record<string, unknown>)[SHARED_REDIS_KEY] = shared;
  process.env.WQ_TEST_REDIS_URL = shared.url;
  process.env.WQ_TEST_REDIS_KIND = shared.kind;
}
