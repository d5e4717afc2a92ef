import { createRequire } from 'node:module';
import { Worker as Thread } from 'node:worker_threads';
import type { Cluster, Redis } from 'ioredis';

/**
 * A worker's heartbeat, sent from a worker thread with its own Redis connection, so that a
 * handler blocking the main event loop does not make a live process look dead.
 *
 * Honest about what it proves: the heartbeat says "this process is alive", not "this job
 * makes progress". A main thread stuck forever keeps beating, so its jobs are not reclaimed
 * early — but the main thread also stops renewing their leases, so they are reclaimed when
 * their leases expire. Liveness of jobs is the lease's business; liveness of the process is
 * the heartbeat's.
 */
export interface Heartbeat {
  /**
   * Resolves once the thread's first beat has landed (at once for the main-thread fallback).
   * A worker leases only after it: a handler blocking the event loop earlier would stop the
   * main thread's bridge beats while the thread is still starting.
   */
  readonly firstBeat: Promise<void>;
  stop(): Promise<void>;
}

/**
 * One beat: the worker's registry entry gets Redis' time. With KEYS[2] (the worker's lease set)
 * and KEYS[3] (the lease hash), also drop from its lease set the jobs it no longer holds: a
 * leased job that was cancelled, completed by a stale holder, or reclaimed leaves its id there
 * (those scripts cannot name the holder's set in KEYS), and the set would otherwise grow for
 * the worker's lifetime. O(jobs in the set), at most `concurrency` plus those few.
 */
const BEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
-- No beat of any worker for the heartbeat timeout: Redis was out of reach; judge beats anew
-- from now (the same rule as beat() in lib/scripts/_common.lua).
local last = tonumber(redis.call('HGET', KEYS[4], 'b'))
redis.call('HSET', KEYS[4], 'b', now)
if last and now - last > tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[4], 's', now)
end
if #KEYS == 4 then
  local held = redis.call('SMEMBERS', KEYS[2])
  local suffix = ':' .. ARGV[1]
  -- In chunks: unpack() takes at most ~8,000 values.
  for i = 1, #held, 1000 do
    local part = { unpack(held, i, math.min(i + 999, #held)) }
    local tokens = redis.call('HMGET', KEYS[3], unpack(part))
    for j, n in ipairs(part) do
      local tk = tokens[j]
      if not tk or string.sub(tk, -#suffix) ~= suffix then
        redis.call('SREM', KEYS[2], n)
      end
    end
  end
end
return 1`;

/** The keys a beat touches: `workersKey` is `<prefix>:{<queue>}:w` (lib/keys.ts). */
function beatKeys(workersKey: string, workerId: string): string[] {
  const base = workersKey.slice(0, -1);
  return [workersKey, `${base}wl:${workerId}`, `${base}lt`, `${base}hb`];
}

// Runs in the thread (CommonJS, evaluated from this string so it works from source and dist alike).
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const ioredis = require(workerData.ioredisPath);
const d = workerData;
const client = d.cluster
  ? new ioredis.Cluster(d.nodes, { ...d.options, lazyConnect: false })
  : new ioredis.Redis({ ...d.options, lazyConnect: false, maxRetriesPerRequest: 1 });
client.on('error', () => {});
let stopped = false;
let first = true;
const beat = () => {
  if (stopped) return;
  client.eval(d.lua, d.keys.length, ...d.keys, d.workerId, d.timeoutMs).then(() => {
    if (first && !stopped) parentPort.postMessage('beat');
    first = false;
  }, () => {});
};
const timer = setInterval(beat, d.intervalMs);
beat();
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  stopped = true;
  clearInterval(timer);
  Promise.race([client.quit(), new Promise((r) => setTimeout(r, 1000))])
    .catch(() => {})
    .finally(() => { client.disconnect(); parentPort.postMessage('stopped'); parentPort.close(); });
});
`;

/** Copy of `v` without functions (or anything else a thread cannot receive). */
function cloneable(v: unknown, depth = 0): unknown {
  if (depth > 6 || typeof v === 'function' || typeof v === 'symbol') return undefined;
  if (v === null || typeof v !== 'object') return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return v.map((x) => cloneable(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const c = cloneable(x, depth + 1);
    if (c !== undefined) out[k] = c;
  }
  return out;
}

/**
 * Start a heartbeat thread beating `workerId` into the `workersKey` zset every `intervalMs`.
 * Until the thread's first beat has landed (starting a thread and connecting can take longer
 * than a heartbeat timeout on a loaded machine, and the worker leases meanwhile), the main
 * thread beats too. Falls back to a main-thread timer (returned `threaded: false`) if the thread
 * cannot start.
 */
export function startHeartbeat(
  client: Redis | Cluster,
  workersKey: string,
  workerId: string,
  intervalMs: number,
  timeoutMs: number,
  onError: (e: unknown) => void,
): Heartbeat & { threaded: boolean } {
  // Duck-typed: a Cluster from another copy of ioredis is not `instanceof` ours.
  const isCluster = (client as { isCluster?: unknown }).isCluster === true;
  const keys = beatKeys(workersKey, workerId);
  const mainBeat = (report: (e: unknown) => void) => () => {
    client.eval(BEAT_LUA, keys.length, ...keys, workerId, timeoutMs).catch(report);
  };
  try {
    const ioredisPath = createRequire(import.meta.url).resolve('ioredis');
    const thread = new Thread(THREAD_CODE, {
      eval: true,
      workerData: {
        ioredisPath,
        cluster: isCluster,
        nodes: isCluster
          ? cloneable((client as unknown as { startupNodes: unknown }).startupNodes)
          : undefined,
        options: cloneable(client.options),
        keys,
        workerId,
        intervalMs,
        timeoutMs,
        lua: BEAT_LUA,
      },
    });
    thread.unref();
    thread.on('error', onError);
    // Bridge beats from the main thread until the thread's own first beat has landed. Their
    // failures are not reported: the thread's beats are the ones that count.
    const bridge = setInterval(
      mainBeat(() => undefined),
      intervalMs,
    );
    bridge.unref();
    let beaten!: () => void;
    const firstBeat = new Promise<void>((resolve) => {
      beaten = resolve;
    });
    thread.on('message', (m) => {
      if (m !== 'beat') return;
      clearInterval(bridge);
      beaten();
    });
    let stopping: Promise<void> | undefined;
    return {
      threaded: true,
      firstBeat,
      stop() {
        clearInterval(bridge);
        beaten();
        stopping ??= new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            void thread.terminate().finally(resolve);
          };
          const timer = setTimeout(done, 2_000);
          thread.on('message', (m) => {
            if (m === 'stopped') done();
          });
          thread.once('exit', done);
          thread.postMessage('stop');
        });
        return stopping;
      },
    };
  } catch (e) {
    onError(e);
    const timer = setInterval(mainBeat(onError), intervalMs);
    timer.unref();
    return {
      threaded: false,
      firstBeat: Promise.resolve(),
      stop: async () => clearInterval(timer),
    };
  }
}
