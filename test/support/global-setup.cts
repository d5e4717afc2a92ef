// Jest globalSetup: start (or pick) ONE Redis for the whole run and hand its URL to the test
// workers through process.env.WQ_TEST_REDIS_URL (workers are forked after this runs).
//
// Why `.cts` and extensionless imports: Jest loads globalSetup/globalTeardown with Node's
// CommonJS `require` (through a pirates hook that runs @swc/jest with CommonJS output), NOT
// through Jest's ESM runtime, so `moduleNameMapper` does not apply. Node's CJS resolver does try
// the hooked `.ts` extension for an extensionless path; `./resolve-ts` (imported first) maps the
// `.js`-suffixed imports inside the launcher to their `.ts` sources. Anything imported from here
// is compiled to CommonJS, so it must not use `import.meta` or top-level await.
import './resolve-ts';
import { acquireSharedRedis } from '../../src/testing/redis-launcher';
import { installRedisServer } from '../../tools/apt-install';

const SHARED_REDIS_KEY = '__WQ_SHARED_REDIS__';

export default async function globalSetup(): Promise<void> {
  const shared = await acquireSharedRedis({ install: installRedisServer });
  (globalThis as Record<string, unknown>)[SHARED_REDIS_KEY] = shared;
  process.env.WQ_TEST_REDIS_URL = shared.url;
  process.env.WQ_TEST_REDIS_KIND = shared.kind;
}
