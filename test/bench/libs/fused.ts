/**
 * Floor 2, "fused Lua list": a minimal version of ours. A job is ONE list entry
 * `<id> <json payload>` (payload inline, no job hash). Add = one script per call (INCRBY for
 * the ids, RPUSH). A worker runs one script per batch that completes the jobs it finished
 * (HDEL from the leased hash) and pops the next ones (LPOP count, HSET into the leased hash so
 * a crashed worker's jobs could be found again). Idle: BLPOP on a second connection, then an
 * HSET. No deadlines, retries, events or registry: the floor for what our design can cost.
 */
import { Redis } from 'ioredis';
import type {
  Adapter,
  AdapterConfig,
  ConsumeOptions,
  Consumer,
  JobData,
  Producer,
} from './types.js';

const BLOCK_S = 1;

/** KEYS: list, id counter. ARGV: payloads. Returns the last id. */
const ADD = `
local n = #ARGV
local last = redis.call('INCRBY', KEYS[2], n)
local first = last - n
for s = 1, n, 1000 do
  local e = {}
  for i = s, math.min(n, s + 999) do e[#e + 1] = (first + i) .. ' ' .. ARGV[i] end
  redis.call('RPUSH', KEYS[1], unpack(e))
end
return last`;

/** KEYS: list, leased hash. ARGV: count, ids to complete... Returns the popped entries. */
const TAKE = `
if #ARGV > 1 then redis.call('HDEL', KEYS[2], unpack(ARGV, 2)) end
local count = tonumber(ARGV[1])
if count < 1 then return {} end
local es = redis.call('LPOP', KEYS[1], count)
if not es then return {} end
local kv = {}
for i, e in ipairs(es) do
  kv[#kv + 1] = string.sub(e, 1, string.find(e, ' ', 1, true) - 1)
  kv[#kv + 1] = e
end
redis.call('HSET', KEYS[2], unpack(kv))
return es`;

type Script = (...args: Array<string | number>) => Promise<unknown>;

function clientWithScripts(config: AdapterConfig) {
  const redis = new Redis({ host: config.host, port: config.port });
  redis.defineCommand('fusedAdd', { numberOfKeys: 2, lua: ADD });
  redis.defineCommand('fusedTake', { numberOfKeys: 2, lua: TAKE });
  const scripts = redis as unknown as { fusedAdd: Script; fusedTake: Script };
  return { redis, add: scripts.fusedAdd.bind(redis), take: scripts.fusedTake.bind(redis) };
}

const keys = (name: string) => ({ list: name, seq: `${name}:seq`, leased: `${name}:leased` });

/** `<id> <json>` → [id, data]. */
function parse(entry: string): [string, JobData] {
  const sp = entry.indexOf(' ');
  return [entry.slice(0, sp), JSON.parse(entry.slice(sp + 1)) as JobData];
}

export function create(config: AdapterConfig): Adapter {
  return {
    lib: 'fused',
    async producer(name: string): Promise<Producer> {
      const { redis, add } = clientWithScripts(config);
      const k = keys(name);
      return {
        ready: async () => {
          await redis.ping();
        },
        add: async (data) => {
          await add(k.list, k.seq, JSON.stringify(data));
        },
        addBulk: async (data) => {
          await add(k.list, k.seq, ...data.map((d) => JSON.stringify(d)));
        },
        close: async () => {
          await redis.quit();
        },
      };
    },
    async consumer(name: string, o: ConsumeOptions): Promise<Consumer> {
      const { redis, take } = clientWithScripts(config);
      const blocking = new Redis({ host: config.host, port: config.port });
      blocking.on('error', () => {
        /* disconnected by close() while blocked */
      });
      const k = keys(name);
      let running = 0;
      let done: string[] = [];
      let pumping: Promise<void> | undefined;
      let closing = false;

      const start = (entry: string) => {
        const [id, data] = parse(entry);
        running += 1;
        const settle = (ok: boolean) => {
          running -= 1;
          if (!ok) o.onFailed?.(); // no retries: completed (dropped) all the same
          done.push(id);
          pump();
        };
        try {
          Promise.resolve(o.handler(data, true)).then(
            () => settle(true),
            () => settle(false),
          );
        } catch {
          settle(false);
        }
      };
      /** One script call at a time: completes what finished, takes what fits. */
      const loop = async () => {
        while (!closing) {
          const ids = done;
          done = [];
          const want = o.concurrency - running;
          if (ids.length === 0 && want === 0) return;
          let entries: string[];
          try {
            entries = (await take(k.list, k.leased, want, ...ids)) as string[];
          } catch (e) {
            done = ids.concat(done); // complete them on the next try
            throw e;
          }
          for (let i = 0; i < ids.length; i++) o.onCompleted();
          for (const e of entries) start(e);
          if (entries.length > 0 || done.length > 0) continue;
          if (running > 0) return; // the next completion pumps again
          const popped = await blocking.blpop(k.list, BLOCK_S);
          if (popped && !closing) {
            redis.hset(k.leased, parse(popped[1])[0], popped[1]).catch(o.onError);
            start(popped[1]);
          }
        }
      };
      const pump = () => {
        if (pumping) return;
        let failed = false;
        pumping = loop()
          .catch((e: unknown) => {
            if (closing) return;
            o.onError(e);
            failed = true;
          })
          .finally(() => {
            pumping = undefined;
            if (closing) return;
            if (failed) setTimeout(pump, 100);
            else if (done.length > 0) pump();
          });
      };
      pump();
      return {
        close: async () => {
          closing = true;
          blocking.disconnect();
          await pumping;
          await redis.quit();
        },
      };
    },
    async drain(name: string, batch: number): Promise<number> {
      const { redis, take } = clientWithScripts(config);
      const k = keys(name);
      let ids: string[] = [];
      let total = 0;
      try {
        for (;;) {
          const entries = (await take(k.list, k.leased, batch, ...ids)) as string[];
          total += ids.length;
          if (entries.length === 0) return total;
          ids = entries.map((e) => e.slice(0, e.indexOf(' ')));
        }
      } finally {
        await redis.quit();
      }
    },
  };
}
