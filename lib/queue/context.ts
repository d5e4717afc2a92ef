/**
 * What every part of a queue shares: its client, name, options and keys, the script runner (every
 * state change is one script, bounded by `commandTimeoutMs`), the start-up check of Redis, and
 * the checks of leases and ids handed back by callers.
 */
import type { Cluster, Redis } from 'ioredis';
import { invalid, redisError, SCRIPT_CODES, scriptError, WorkQueueError } from '../errors.js';
import { queueKeys, type QueueKeys } from '../redis/queue-keys.js';
import { clientProblems, resolveQueueOptions, type ResolvedQueueOptions } from '../options.js';
import { bounded, timeLeft } from '../redis/bounded.js';
import { guardFailoverDetector } from '../redis/connection.js';
import { checkRedis } from '../redis/info.js';
import type { ScriptName } from '../scripts/assemble.js';
import {
  callScript,
  defineScripts,
  ScriptKeys,
  type Arg,
  type ScriptArgs,
  type ScriptClient,
} from '../scripts/define.js';
import type { AddHook } from '../types/hooks.js';
import { malformedProblem } from '../util/checks.js';
import type { Lease, WorkQueueOptions } from '../types/index.js';

export type { Arg, ScriptArgs };

/** The reply of a script whose caller does not hold the lease (its callers handle it). */
const LEASE_LOST = SCRIPT_CODES.LEASE_LOST.reply;

export interface RunOptions {
  /** The worker whose keys (lease set, hand-off list) the script touches. */
  workerId?: string;
  /** The producer session whose keys the script touches (add). */
  session?: string;
  /** The cancel call whose answer the script keeps (cancel). */
  ackId?: string;
  /** The worker registration whose id the script keeps (worker_registry). */
  registration?: string;
  /** The priorities (digits) whose pending lists the script gets (add). */
  pending?: string;
  /** Replies as Buffers when the codec is 'buffer' (scripts that return payloads). */
  buffers?: boolean;
  /** Replies as Buffers whatever the codec (binary data). */
  binary?: boolean;
  /** The operation errors name (default: the script's name). */
  op?: string;
  /** The script's keys, from `scriptKeys.of` with these options (kept by a hot caller). */
  keys?: readonly Arg[];
}

export class QueueContext {
  readonly options: ResolvedQueueOptions;
  readonly keys: QueueKeys;
  readonly scripts: ScriptClient;
  readonly scriptKeys: ScriptKeys;
  /** Add hooks installed by `useAddHook` (tracing), outermost last. */
  readonly addHooks: AddHook[] = [];
  /** Leases this queue handed out (their shape needs no checking). */
  readonly issued = new WeakSet<Lease>();
  private checked: Promise<void> | undefined;
  private isReady = false;

  constructor(
    readonly client: Redis | Cluster,
    readonly name: string,
    options: WorkQueueOptions,
  ) {
    this.options = resolveQueueOptions(name, options, clientProblems(client));
    this.keys = queueKeys(this.options.prefix, name);
    this.scripts = defineScripts(client);
    guardFailoverDetector(client); // a Sentinel client: see there
    this.scriptKeys = new ScriptKeys(this.keys, this.options.eventMaxLen);
  }

  /**
   * Checks Redis once (version >= 6.2; warns when eviction can drop jobs), then writes the
   * limits the options name. Each caller waits `commandTimeoutMs` at most in all (the check's
   * steps, each bounded, could take longer together when Redis answers slowly).
   */
  ready(op = 'ready'): Promise<void> {
    if (this.isReady) return this.checked!;
    const check = this.check();
    const context = `queue ${this.name}: ${op}`;
    return new Promise<void>((resolve, reject) => {
      check.then(resolve, reject);
      // A step of the check that times out at this same moment (its first) names itself: its
      // error goes first, this one a turn of the event loop later.
      const unsent = 'in its start-up check: nothing of the operation sent';
      bounded(this.client, this.options.commandTimeoutMs, context, () => check, unsent).catch(
        (e: unknown) => setImmediate(() => reject(e)),
      );
    });
  }

  /** The check and the limits' writes: once per queue object (again after a failure). */
  private check(): Promise<void> {
    const o = this.options;
    this.checked ??= checkRedis(this.client, `queue ${this.name}`, o.commandTimeoutMs, o.logger)
      .then(async () => {
        // The limiter option is written once per queue object (docs/flow-control.md), and so
        // are the groups' default limits (docs/groups.md; group '' names the defaults).
        const l = o.limiter;
        if (l) await this.script('flow_control', ['rate', l.max, l.durationMs]);
        const g = o.groups;
        if (g) {
          await this.script('group_admin', ['conc', '', g.concurrency ?? 0]);
          const gl = g.limiter;
          await this.script('group_admin', ['rate', '', gl?.max ?? 0, gl?.durationMs ?? 0]);
        }
      })
      .then(
        () => {
          this.isReady = true;
        },
        (e: unknown) => {
          this.checked = undefined;
          throw e;
        },
      );
    return this.checked;
  }

  /**
   * `ready()`, then `send` given the time left of one `commandTimeoutMs` for both (the first
   * operation of a queue object is bounded as any other); none left: REDIS_UNAVAILABLE, and
   * nothing sent.
   */
  readyThen<X>(op: string, send: (timeoutMs: number) => Promise<X>): Promise<X> {
    const timeoutMs = this.options.commandTimeoutMs;
    if (this.isReady) return send(timeoutMs);
    const since = performance.now();
    return this.ready(op).then(() => send(timeLeft(timeoutMs, since, `queue ${this.name}: ${op}`)));
  }

  /**
   * Run a script with its keys and its arguments (typed by its `--! argv:` header); a negative
   * reply other than E_LEASE_LOST becomes an error.
   */
  run<N extends ScriptName>(
    name: N,
    args: Readonly<ScriptArgs[N]>,
    o: RunOptions = {},
  ): Promise<unknown> {
    if (this.isReady) return this.script(name, args, o);
    return this.readyThen(o.op ?? name, (ms) => this.script(name, args, o, ms));
  }

  /** (Not async: a promise fewer per call on the hot paths, e.g. every add.) */
  private script<N extends ScriptName>(
    name: N,
    args: Readonly<ScriptArgs[N]>,
    o: RunOptions = {},
    timeoutMs = this.options.commandTimeoutMs,
  ): Promise<unknown> {
    const buffers = o.binary === true || (o.buffers === true && this.options.codec === 'buffer');
    const context = `queue ${this.name}: ${o.op ?? name}`;
    return bounded(this.client, timeoutMs, context, () =>
      callScript(this.scripts, name, o.keys ?? this.scriptKeys.of(name, o), args, buffers),
    ).then(
      (reply) => {
        if (typeof reply === 'number' && reply < 0 && reply !== LEASE_LOST) {
          throw scriptError(reply, context);
        }
        return reply;
      },
      (e: unknown) => {
        throw redisError(context, e);
      },
    );
  }

  /** Refuse what is not a lease of this queue (forged, foreign, or not a lease at all). */
  checkLease(lease: Lease): void {
    if (this.issued.has(lease)) return; // ours, unchanged shape: skip the checks below
    if (
      typeof lease !== 'object' ||
      lease === null ||
      typeof lease.seq !== 'string' ||
      typeof lease.token !== 'string'
    ) {
      throw new WorkQueueError('INVALID_ARGUMENT', 'not a lease (use a lease returned by lease())');
    }
    if (lease.queueKey !== this.keys.base) {
      throw new WorkQueueError(
        'FOREIGN_LEASE',
        `lease of ${lease.queueKey} given to queue ${this.keys.base}`,
      );
    }
    if (!/^\d+$/.test(lease.seq) || !/^s?\d+$/.test(lease.token) || !/^\d+$/.test(lease.workerId)) {
      throw new WorkQueueError('INVALID_ARGUMENT', 'malformed lease (forged?)');
    }
  }

  /** A job id's problem: thrown, or added to `problems` when given (to list it with others). */
  checkId(id: string, problems?: string[]): void {
    const problem =
      typeof id !== 'string' || id.length === 0 || id.length > 256
        ? 'id must be a string of 1-256 characters'
        : malformedProblem('id', id);
    if (problem === undefined) return;
    if (!problems) throw invalid([problem]);
    problems.push(problem);
  }
}
