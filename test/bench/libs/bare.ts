/**
 * Floor 1, "bare list": the least Redis allows for a list queue. Add = one LPUSH of the JSON
 * payload; take = one LMOVE from the list's tail into a taken list (BLMOVE on a second
 * connection when the list is empty); nothing else: no ids, no leases, no acknowledgement,
 * no retries (taken jobs stay in `<queue>:taken`). Not a usable queue: the floor to compare
 * with.
 */
import { Redis } from 'ioredis';
import { sleep } from '../util.js';
import type {
  Adapter,
  AdapterConfig,
  ConsumeOptions,
  Consumer,
  JobData,
  Producer,
} from './types.js';

/** How long one idle BLMOVE blocks (s); close() also interrupts it. */
const BLOCK_S = 1;

export function create(config: AdapterConfig): Adapter {
  const client = () => new Redis({ host: config.host, port: config.port });
  return {
    lib: 'bare',
    async producer(name: string): Promise<Producer> {
      const redis = client();
      return {
        ready: async () => {
          await redis.ping();
        },
        add: async (data) => {
          await redis.lpush(name, JSON.stringify(data));
        },
        addBulk: async (data) => {
          await redis.lpush(name, ...data.map((d) => JSON.stringify(d)));
        },
        close: async () => {
          await redis.quit();
        },
      };
    },
    async consumer(name: string, o: ConsumeOptions): Promise<Consumer> {
      const redis = client();
      const blocking = client();
      blocking.on('error', () => {
        /* disconnected by close() while blocked */
      });
      const taken = `${name}:taken`;
      let closing = false;
      /** The one BLMOVE in flight while idle; the slot that sent it gets its job. */
      let idle: Promise<string | null> | undefined;

      const take = async (): Promise<string | null> => {
        const raw = await redis.lmove(name, taken, 'RIGHT', 'LEFT');
        if (raw !== null || closing) return raw;
        if (idle) {
          await idle.catch(() => null);
          return null; // look again with LMOVE
        }
        idle = blocking.blmove(name, taken, 'RIGHT', 'LEFT', BLOCK_S);
        try {
          return await idle;
        } finally {
          idle = undefined;
        }
      };
      const slot = async () => {
        while (!closing) {
          let raw: string | null;
          try {
            raw = await take();
          } catch (e) {
            if (!closing) {
              o.onError(e);
              await sleep(100);
            }
            continue;
          }
          if (raw === null) continue;
          try {
            await o.handler(JSON.parse(raw) as JobData, true);
            o.onCompleted();
          } catch {
            o.onFailed?.(); // no retries: the job is dropped
          }
        }
      };
      const slots = Array.from({ length: o.concurrency }, () => slot());
      return {
        close: async () => {
          closing = true;
          blocking.disconnect();
          await Promise.all(slots);
          await redis.quit();
        },
      };
    },
  };
}
