// The lease renewer (like BullMQ's LockManager): every third of a lease, extends in one call the
// leases of the running and prefetched jobs, carrying the running jobs' log lines (job.log); a
// run whose lease is gone ends as lost.
import type { LogBatch } from '../job/logs.js';
import type { Lease } from '../types/job.js';
import type { WorkerContext } from './context.js';
import { takeLogs } from './job.js';
import type { RenewerPart } from './parts.js';

export class LeaseRenewer<T, R> implements RenewerPart {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  start(): void {
    const every = Math.max(50, Math.floor(this.ctx.settings.leaseMs / 3));
    this.timer = setInterval(() => void this.renew(), every);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Extend every held job's lease in one call; runs that lost theirs end as lost. */
  async renew(): Promise<void> {
    const { runs, handoffs } = this.ctx;
    // Hand-offs not adopted yet are not ours to renew.
    const running = runs.runs().filter((r) => !handoffs.isUnadopted(r.lease.token));
    const waiting = runs.waiting().filter((l) => !handoffs.isUnadopted(l.token));
    if (running.length + waiting.length === 0) return;
    const logs = new Map<Lease, LogBatch>();
    for (const r of running) {
      const l = takeLogs(r);
      if (l) logs.set(r.lease, l);
    }
    try {
      const ok = await this.ctx.queue.renew(
        [...running.map((r) => r.lease), ...waiting],
        this.ctx.settings.leaseMs,
        logs,
      );
      ok.forEach((v, i) => {
        if (v) return;
        if (i < running.length) {
          runs.end(running[i]!, { kind: 'lost', reason: 'lease lost (expired and reclaimed)' });
        } else {
          runs.drop(waiting[i - running.length]!.token);
        }
      });
    } catch (e) {
      // Not sent: the lines go with the next renewal or the outcome.
      for (const r of running) {
        const sent = logs.get(r.lease);
        if (!sent) continue;
        const later = r.logs;
        r.logs = later
          ? { lines: [...sent.lines, ...later.lines], dropped: sent.dropped + later.dropped }
          : sent;
      }
      this.ctx.report(e);
    }
  }
}
