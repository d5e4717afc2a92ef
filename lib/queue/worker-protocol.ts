/**
 * The Worker's private protocol with its queue: registration and heartbeats, parking and the
 * idle wait on the wake list (docs/internals/hand-off.md), and reconciling after a dropped connection.
 */
import type { Cluster, Redis } from 'ioredis';
import { redisError } from '../errors.js';
import { bounded } from '../redis/bounded.js';
import type { LeasedJob } from '../types/index.js';
import type { QueueContext } from './context.js';
import { handedOffJob, str, type Raw } from '../job/records.js';

export class WorkerProtocol<T> {
  constructor(private readonly ctx: QueueContext) {}

  private worker(action: 'beat' | 'leave' | 'unpark', workerId: string, token = '') {
    const hb = this.ctx.options.heartbeatTimeoutMs;
    const own = token ? { workerId, registration: token } : { workerId };
    return this.ctx.run('worker_registry', [action, workerId, hb, 0], own);
  }

  /**
   * `info`: JSON of what getWorkers() shows (lib/queue/history.ts). `graceMs` > 0: the
   * registration is also a bridge beat with that grace (lib/worker/heartbeat.ts). `token`:
   * names the registration (a re-sent one answers the same id), '' = none.
   */
  async register(info: string, graceMs = 0, token = ''): Promise<string> {
    const hb = this.ctx.options.heartbeatTimeoutMs;
    const args = ['register', token || '0', hb, graceMs, info] as const;
    const own = token ? { registration: token } : {};
    return str((await this.ctx.run('worker_registry', args, own)) as Raw);
  }

  async beat(workerId: string): Promise<void> {
    await this.worker('beat', workerId);
  }

  /** `token`: its registration's (its record goes too). */
  async leave(workerId: string, token = ''): Promise<void> {
    await this.worker('leave', workerId, token);
  }

  async unpark(workerId: string): Promise<void> {
    await this.worker('unpark', workerId);
  }

  async reconcile(
    workerId: string,
    known: readonly string[],
  ): Promise<{ leases: number; handoffs: number }> {
    // { leases given back, hand-offs given back }
    const r = (await this.ctx.run('reconcile_worker', [workerId, ...known], {
      workerId,
    })) as number[];
    return { leases: r[0]!, handoffs: r[1]! };
  }

  /** The queue's pause version now (0: not paused; see flow_control.lua). */
  async pauseVersion(): Promise<number> {
    const r = (await this.ctx.run('flow_control', ['get'])) as number[];
    return r[0]!;
  }

  /** Which of `groups` are paused now (read one by one: a worker holds jobs of a few). */
  async pausedGroups(groups: readonly string[]): Promise<Set<string>> {
    const { client, keys, options, name } = this.ctx;
    const answers = await Promise.all(
      groups.map((g) =>
        bounded(client, options.commandTimeoutMs, `queue ${name}: paused groups`, () =>
          client.sismember(keys.key('groupsPaused'), g),
        ),
      ),
    );
    return new Set(groups.filter((_, i) => answers[i] === 1));
  }

  async waitForWork(
    blockingClient: Redis | Cluster,
    timeoutMs: number,
    workerId: string,
  ): Promise<boolean | LeasedJob<T>> {
    const seconds = Math.max(0.01, timeoutMs / 1000);
    const k = this.ctx.keys;
    const r = await blockingClient
      .blmoveBuffer(k.wake, k.workerHandoffs(workerId), 'LEFT', 'RIGHT', Number(seconds.toFixed(3)))
      .catch((e: unknown) => {
        // (Typed as every call's: NOREPLICAS, READONLY… are REDIS_UNAVAILABLE.)
        throw redisError(`queue ${this.ctx.name}: idle wait`, e);
      });
    if (r === null) return false;
    return handedOffJob<T>(this.ctx, r, workerId) ?? true;
  }
}
