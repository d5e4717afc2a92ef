/**
 * Running flow scripts on any queue under one prefix (a flow spans queues, and on a Cluster their
 * slots): the keys of each queue built once, every call bounded by `commandTimeoutMs` like a
 * queue's own (QueueContext.run), failures turned into typed errors; writes that create jobs
 * confirmed by `replicaAcks` replicas of the node that ran them (replica-acks.ts).
 */
import type { Cluster, Redis } from 'ioredis';
import { redisError, SCRIPT_CODES, scriptError } from '../../errors.js';
import { queueKeys, type QueueKeys } from '../../redis/queue-keys.js';
import type { ResolvedQueueOptions } from '../../options.js';
import { bounded, timeLeft } from '../../redis/bounded.js';
import { isCluster } from '../../redis/connection.js';
import { checkRedis } from '../../redis/info.js';
import { perQueueKeys, scriptShape, type ScriptName } from '../../scripts/assemble.js';
import {
  callScript,
  defineScripts,
  ScriptKeys,
  type Arg,
  type ScriptArgs,
  type ScriptClient,
} from '../../scripts/define.js';
import { ReplicaAcks, type Acked } from '../replica-acks.js';

export class FlowRunner {
  readonly scripts: ScriptClient;
  private readonly keys = new Map<string, { keys: QueueKeys; script: ScriptKeys }>();
  private checked: Promise<void> | undefined;
  /** The replica acks of each slot's writes (on one Redis: one for all), made on first use. */
  private readonly acks = new Map<string, ReplicaAcks>();

  constructor(
    readonly client: Redis | Cluster,
    readonly options: ResolvedQueueOptions,
    /** The start-up check of Redis, when another does it (a queue's context). */
    private readonly check?: () => Promise<void>,
  ) {
    this.scripts = defineScripts(client);
  }

  /** The keys of queue `name` under this prefix. */
  keysOf(name: string): QueueKeys {
    return this.entry(name).keys;
  }

  private entry(name: string) {
    let e = this.keys.get(name);
    if (!e) {
      const keys = queueKeys(this.options.prefix, name);
      e = { keys, script: new ScriptKeys(keys, this.options.eventMaxLen) };
      if (this.keys.size > 10_000) this.keys.clear();
      this.keys.set(name, e);
    }
    return e;
  }

  /** Checks Redis once (version >= 6.2; warns when eviction can drop jobs). */
  ready(): Promise<void> {
    if (this.check) return this.check();
    const o = this.options;
    this.checked ??= checkRedis(this.client, 'flows', o.commandTimeoutMs, o.logger).catch(
      (e: unknown) => {
        this.checked = undefined;
        throw e;
      },
    );
    return this.checked;
  }

  /** Run script `name` on queue `queue` (a script of one queue's keys). */
  run<N extends ScriptName>(
    queue: string,
    name: N,
    args: Readonly<ScriptArgs[N]>,
  ): Promise<unknown> {
    return this.call(queue, name, this.entry(queue).script.of(name), args);
  }

  /** Run per-queue script `name` with the keys of `queues`, in order (lib/scripts/assemble.ts). */
  runOn<N extends ScriptName>(
    queues: readonly string[],
    name: N,
    args: Readonly<ScriptArgs[N]>,
  ): Promise<unknown> {
    return this.call(queues.join(', '), name, this.keysOn(queues, name), args);
  }

  /**
   * `runOn` (a `multi` script: its keys per queue) or `run` (one queue's), then WAIT for
   * `replicaAcks` replicas of the node that ran it, in one pipeline (ReplicaAcks; call with
   * `replicaAcks` > 0). Resolves the reply and how many confirmed (replica-acks.ts `confirmed`
   * checks them).
   */
  runAcked<N extends ScriptName>(
    queues: readonly string[],
    name: N,
    args: Readonly<ScriptArgs[N]>,
    multi: boolean,
  ): Promise<Acked> {
    const where = queues.join(', ');
    const lane = isCluster(this.client) ? where : '';
    let acks = this.acks.get(lane);
    if (!acks) {
      const ready = () => this.ready();
      acks = new ReplicaAcks({ client: this.client, name: where, options: this.options, ready });
      if (this.acks.size > 1_000) this.acks.clear();
      this.acks.set(lane, acks);
    }
    const keys = multi ? this.keysOn(queues, name) : this.entry(queues[0]!).script.of(name);
    return acks.run(name, keys, args, { context: `queue ${where}: ${name}`, again: '' });
  }

  private keysOn(queues: readonly string[], name: ScriptName): readonly Arg[] {
    return perQueueKeys(
      scriptShape(name),
      queues.map((q) => this.keysOf(q)),
      this.options.eventMaxLen,
    );
  }

  private async call<N extends ScriptName>(
    where: string,
    name: N,
    keys: readonly Arg[],
    args: Readonly<ScriptArgs[N]>,
  ): Promise<unknown> {
    const context = `queue ${where}: ${name}`;
    const since = performance.now();
    await this.ready();
    // (One commandTimeoutMs for the start-up check and the call.)
    const ms = timeLeft(this.options.commandTimeoutMs, since, context);
    let reply: unknown;
    try {
      reply = await bounded(this.client, ms, context, () =>
        callScript(this.scripts, name, keys, args),
      );
    } catch (e) {
      throw redisError(context, e);
    }
    if (typeof reply === 'number' && reply < 0 && reply !== SCRIPT_CODES.LEASE_LOST.reply) {
      throw scriptError(reply, context);
    }
    return reply;
  }
}
