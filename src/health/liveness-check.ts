// The liveness check behind WorkQueueHealthIndicator.isAlive(): is this process still able to do
// its work, so that a restart would not help? Reads this instance's workers (lib/worker/liveness.ts)
// and pings the module's connections; every Redis call bounded.
import { performance } from 'node:perf_hooks';
import type { Cluster, Redis } from 'ioredis';
import type { WorkQueue } from '../../lib/internal.js';
import { MAX_TIMER_MS, within } from '../../lib/internal.js';
import type { WorkQueueContext } from '../work-queue.context.js';
import { show, unknownOption } from '../work-queue.messages.js';
import {
  badLivenessMs,
  heartbeatLost,
  livenessOptionsNotObject,
  MAIN_CONNECTION,
  queuesConnection,
  unreachableFor,
  workerStalled,
} from '../health/health.messages.js';
import { Reachability, UNREACHABLE_STATUSES } from './reachability.js';

export interface WorkQueueLivenessOptions {
  /**
   * How long a worker may go without leasing while jobs wait, a dead heartbeat thread without a
   * replacement, or a connection without reaching Redis, before the process counts as not alive.
   * Default 30 000 ms: shorter blips (a Redis restart, a failover) are not a reason to restart.
   */
  stalledAfterMs?: number;
  /** How long each Redis call of the check may take. Default 1 000 ms. */
  timeoutMs?: number;
}

/** One worker of this instance, as `isAlive()` reports it. */
export interface WorkQueueWorkerLiveness {
  /**
   * `ok`: leasing, or nothing to lease; `paused`: paused (the worker or its queue), or closing;
   * `stalled`: jobs wait while its lease calls have gone unanswered for `stalledAfterMs`.
   */
  state: 'ok' | 'paused' | 'stalled';
  /** How long its lease loop's calls have gone unanswered (0: the last one was answered). */
  unansweredMs: number;
  /** Pending jobs of its queue, when the check looked (only for a worker behind). */
  pending?: number;
  /** Where its heartbeat beats from: the shared thread, or the main thread. */
  heartbeat: 'thread' | 'main thread';
  /** How long ago its heartbeat thread died without a replacement since (0: none died). */
  heartbeatLostMs: number;
}

/** What `isAlive()` reports. */
export interface WorkQueueLivenessDetails extends Record<string, unknown> {
  /** The workers this instance runs, by queue name (none for a producer-only instance). */
  workers: Record<string, WorkQueueWorkerLiveness>;
  /** How long the module's connection that is longest without Redis has been (0: all reach it). */
  unreachableMs: number;
  /** Why the indicator is down. */
  problems?: string[];
}

/** Every problem with the options of `isAlive()`, one string each. */
export function livenessOptionProblems(options: unknown): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return [livenessOptionsNotObject(show(options))];
  }
  const known = ['stalledAfterMs', 'timeoutMs'];
  const o = options as Record<string, unknown>;
  const problems = Object.keys(o)
    .filter((k) => !known.includes(k) && o[k] !== undefined)
    .map((k) => unknownOption('', k));
  for (const key of known) {
    const v = o[key];
    // (At most a timer's range: Node fires a longer one at once, every PING then unanswered.)
    if (
      v !== undefined &&
      (typeof v !== 'number' || !Number.isInteger(v) || v <= 0 || v > MAX_TIMER_MS)
    ) {
      problems.push(badLivenessMs(key, show(v)));
    }
  }
  return problems;
}

export class LivenessCheck {
  private readonly watched = new Map<Redis | Cluster, Reachability>();

  constructor(private readonly context: WorkQueueContext) {
    this.watch(context.client);
  }

  /** Follow every connection of the module (the queues' ones once they are registered). */
  watch(client: Redis | Cluster): void {
    if (!this.watched.has(client)) this.watched.set(client, new Reachability(client));
  }

  detach(): void {
    for (const r of this.watched.values()) r.detach();
    this.watched.clear();
  }

  async run(stalledAfterMs: number, timeoutMs: number): Promise<WorkQueueLivenessDetails> {
    const { context } = this;
    for (const q of context.queues) this.watch(q.client);
    const workers = context.workers.map((w) => ({ worker: w, seen: w.liveness }));
    // Only a worker whose calls have gone unanswered that long is looked at more closely.
    const behind = workers.filter((w) => !w.seen.paused && w.seen.unansweredMs >= stalledAfterMs);
    const clients = [...this.watched.keys()];
    const sentAt = performance.now();
    const [pings, looks] = await Promise.all([
      Promise.all(
        clients.map((c) => ping(c, timeoutMs, () => this.watched.get(c)?.probed(true, sentAt))),
      ),
      Promise.all(behind.map((w) => look(w.worker.queue, timeoutMs))),
    ]);
    const problems: string[] = [];
    let unreachableMs = 0;
    clients.forEach((client, i) => {
      const r = this.watched.get(client)!;
      r.probed(pings[i]!, sentAt);
      const ms = r.unreachableMs();
      unreachableMs = Math.max(unreachableMs, ms);
      if (ms >= stalledAfterMs) problems.push(unreachableFor(this.label(client), ms));
    });
    const details: WorkQueueLivenessDetails = { workers: {}, unreachableMs };
    for (const { worker, seen } of workers) {
      const name = worker.queue.name;
      const report: WorkQueueWorkerLiveness = {
        state: seen.paused ? 'paused' : 'ok',
        unansweredMs: seen.unansweredMs,
        heartbeat: seen.heartbeat,
        heartbeatLostMs: seen.heartbeatLostMs,
      };
      const i = behind.findIndex((w) => w.worker === worker);
      // Unknown (Redis did not answer): the connection's own check above speaks for it.
      const found = i < 0 ? undefined : looks[i];
      if (found) {
        report.pending = found.pending;
        // Still behind now (an answer may have come while we looked: not a stall).
        const still = worker.liveness.unansweredMs >= stalledAfterMs;
        if (found.paused) report.state = 'paused';
        else if (found.pending > 0 && still) {
          report.state = 'stalled';
          problems.push(workerStalled(name, found.pending, seen.unansweredMs));
        }
      }
      if (seen.heartbeatLostMs >= stalledAfterMs) {
        problems.push(heartbeatLost(name, seen.heartbeatLostMs));
      }
      details.workers[name] = report;
    }
    if (problems.length > 0) details.problems = problems;
    return details;
  }

  /** How problems name a connection: the module's, or the queues that use it. */
  private label(client: Redis | Cluster): string {
    if (client === this.context.client) return MAIN_CONNECTION;
    return queuesConnection(
      this.context.queues.filter((q) => q.client === client).map((q) => q.name),
    );
  }
}

/**
 * PING within the timeout; never sent to a connection that is down (it would wait to resend).
 * A PING answered after the timeout calls `answeredLate`.
 */
async function ping(
  client: Redis | Cluster,
  timeoutMs: number,
  answeredLate: () => void,
): Promise<boolean> {
  if (UNREACHABLE_STATUSES.has(client.status)) return false;
  const reply = client.ping().then(
    () => true,
    () => false,
  );
  const answered = await within(reply, timeoutMs);
  if (answered === undefined) void reply.then((ok) => ok && answeredLate());
  return answered === true;
}

/** The queue's pending jobs and pause, within the timeout (undefined: no answer). */
async function look(
  queue: WorkQueue,
  timeoutMs: number,
): Promise<{ pending: number; paused: boolean } | undefined> {
  const both = Promise.all([queue.counts(), queue.isPaused()]).then(
    ([c, paused]) => ({ pending: c.pending, paused }),
    () => undefined,
  );
  return within(both, timeoutMs);
}
