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
  stop(): Promise<void>;
}

const BEAT_LUA =
  "local t = redis.call('TIME') redis.call('ZADD', KEYS[1], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), ARGV[1]) return 1";

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
const beat = () => {
  if (stopped) return;
  client.eval(d.lua, 1, d.key, d.workerId).catch(() => {});
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
 * Falls back to a main-thread timer (returned `threaded: false`) if the thread cannot start.
 */
export function startHeartbeat(
  client: Redis | Cluster,
  workersKey: string,
  workerId: string,
  intervalMs: number,
  onError: (e: unknown) => void,
): Heartbeat & { threaded: boolean } {
  // Duck-typed: a Cluster from another copy of ioredis is not `instanceof` ours.
  const isCluster = (client as { isCluster?: unknown }).isCluster === true;
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
        key: workersKey,
        workerId,
        intervalMs,
        lua: BEAT_LUA,
      },
    });
    thread.unref();
    thread.on('error', onError);
    let stopping: Promise<void> | undefined;
    return {
      threaded: true,
      stop() {
        stopping ??= new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            void thread.terminate().finally(resolve);
          };
          const timer = setTimeout(done, 2_000);
          thread.once('message', done);
          thread.once('exit', done);
          thread.postMessage('stop');
        });
        return stopping;
      },
    };
  } catch (e) {
    onError(e);
    const beat = () => {
      client.eval(BEAT_LUA, 1, workersKey, workerId).catch(onError);
    };
    const timer = setInterval(beat, intervalMs);
    timer.unref();
    return {
      threaded: false,
      stop: async () => clearInterval(timer),
    };
  }
}
