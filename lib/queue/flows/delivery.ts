/**
 * Delivering flow notices (docs/internals/flows.md): a child that ends writes a notice in its own
 * queue; this reads notices there, applies them in their parents' queues (flow_notice.lua,
 * idempotent by child), acknowledges them where they came from (flow_ack.lua), and cancels the
 * children of parents that failed (flow_cancel.lua). The worker delivers the notices of the jobs
 * it completed or dead-lettered right after; cancel and drain deliver theirs; clean() delivers
 * whatever a crash left over; a notice is delivered a second time RECHECK_MS after the first
 * (a failover may have lost the first), then dropped.
 */
import { errorMessage } from '../../errors.js';
import type { FlowCleanReport } from '../../types/index.js';
import { bounded, timeLeft } from '../../redis/bounded.js';
import type { ScriptArgs } from '../../scripts/define.js';
import type { FlowRunner } from './runner.js';

/** clean() delivers notices older than this; the worker that ended the job delivers the younger. */
export const NOTICE_GRACE_MS = 2_000;
/** A notice is delivered again this long after its first delivery, then dropped. */
export const RECHECK_MS = 3_000;
/** A flow add's reservation not written after this long is dropped (its producer died). */
export const ORPHAN_MS = 10 * 60_000;
/** Most notices or cancels one call takes. */
const PAGE = 1000;

/** A notice of the outbox: the child's seq and the notice as stored. */
type Notice = readonly [seq: string, notice: string];

type Work =
  /** Notices of children of `queue`: first deliveries and second ones. */
  | { kind: 'notices'; queue: string; first: Notice[]; second: Notice[] }
  /** Children of `queue`'s parents to cancel ('<queue>:<seq>'). */
  | { kind: 'cancels'; queue: string; members: string[] }
  /** Whatever `queue` has to deliver now (a flow script said it wrote some). */
  | { kind: 'flush'; queue: string };

/** The reply tail of a flow script (flow_out_reply in flow_parents.lua): did it write any? */
function wroteAny(reply: unknown[], from: number): boolean {
  const notices = Number(reply[from]);
  return notices > 0 || Number(reply[from + 1 + 2 * notices]) === 1;
}

const parentQueue = (notice: string): string => notice.split('\t', 2)[1] ?? '';

export class FlowDelivery {
  constructor(readonly runner: FlowRunner) {}

  /** Deliver the notices that children `seqs` of `queue` just wrote (they ended). */
  async deliver(queue: string, seqs: readonly string[]): Promise<FlowCleanReport> {
    const report = emptyReport();
    if (seqs.length === 0) return report;
    const r = this.runner;
    const key = r.keysOf(queue).key('flowOutbox');
    const at = `queue ${queue}: flow notices`;
    const since = performance.now();
    await r.ready();
    const ms = timeLeft(r.options.commandTimeoutMs, since, at);
    const got = await bounded(r.client, ms, at, () => r.client.hmget(key, ...seqs));
    const first: Notice[] = [];
    got.forEach((n, i) => n !== null && first.push([seqs[i]!, n]));
    await this.process([{ kind: 'notices', queue, first, second: [] }], report);
    return report;
  }

  /**
   * Deliver what `queue` has left: `due` (clean: what its workers did not deliver), `now` (every
   * notice not delivered yet and every cancel: after cancel or drain), `all` (repair).
   */
  async flush(queue: string, mode: 'due' | 'now' | 'all'): Promise<FlowCleanReport> {
    const report = emptyReport();
    await this.flushInto(queue, mode, report);
    return report;
  }

  private async flushInto(queue: string, mode: 'due' | 'now' | 'all', report: FlowCleanReport) {
    for (;;) {
      const args: ScriptArgs['flow_due'] = [mode, NOTICE_GRACE_MS, ORPHAN_MS, PAGE];
      // { u, (seq, notice) × u, r, (seq, notice) × r, c, member × c, reservations dropped }
      const reply = (await this.runner.run(queue, 'flow_due', args)) as string[];
      let i = 0;
      const pairs = (): Notice[] => {
        const n = Number(reply[i++]);
        const out: Notice[] = [];
        for (let k = 0; k < n; k++, i += 2) out.push([reply[i]!, reply[i + 1]!]);
        return out;
      };
      const first = pairs();
      const second = pairs();
      const c = Number(reply[i++]);
      const members = reply.slice(i, i + c);
      report.reservationsDropped += Number(reply[i + c]);
      const done = await this.process(
        [
          { kind: 'notices', queue, first, second },
          { kind: 'cancels', queue, members },
        ],
        report,
      );
      const full = Math.max(first.length, second.length, members.length) >= PAGE;
      if (!full || !done) return;
    }
  }

  /** Do the work (and what it leads to); false when some could not be done (left for clean). */
  private async process(work: Work[], report: FlowCleanReport): Promise<boolean> {
    let ok = true;
    for (let w = work.shift(); w; w = work.shift()) {
      try {
        if (w.kind === 'notices') await this.notices(w, work, report);
        else if (w.kind === 'cancels') await this.cancels(w, work, report);
        else await this.flushInto(w.queue, 'now', report);
      } catch (e) {
        ok = false;
        this.runner.options.logger?.warn(
          `queue ${w.queue}: flow work left for clean() to retry: ${errorMessage(e)}`,
        );
      }
    }
    return ok;
  }

  /** Apply notices of `w.queue`'s children in their parents' queues, then acknowledge them. */
  private async notices(
    w: Extract<Work, { kind: 'notices' }>,
    work: Work[],
    report: FlowCleanReport,
  ): Promise<void> {
    const byParent = new Map<string, { first: Notice[]; second: Notice[] }>();
    for (const [list, which] of [
      [w.first, 'first'],
      [w.second, 'second'],
    ] as const) {
      for (const n of list) {
        const q = parentQueue(n[1]);
        let g = byParent.get(q);
        if (!g) byParent.set(q, (g = { first: [], second: [] }));
        g[which].push(n);
      }
    }
    let failed: unknown;
    for (const [parent, g] of byParent) {
      const all = [...g.first, ...g.second];
      const args: ScriptArgs['flow_notice'] = [w.queue, all.length];
      for (const [seq, notice] of all) args.push(seq, notice);
      try {
        // per notice 1 | 0 | 2, then what it wrote (a parent that failed: its own notice, the
        // children it stops)
        const reply = (await this.runner.run(parent, 'flow_notice', args)) as unknown[];
        if (wroteAny(reply, all.length)) work.push({ kind: 'flush', queue: parent });
        await this.ack(w.queue, g.first, g.second);
        report.notices += all.length;
      } catch (e) {
        failed ??= e;
      }
    }
    if (failed !== undefined) throw failed;
  }

  private async ack(queue: string, first: Notice[], second: Notice[]): Promise<void> {
    if (first.length > 0) {
      const args: ScriptArgs['flow_ack'] = ['delivered', RECHECK_MS, first.length];
      for (const [seq] of first) args.push(seq);
      await this.runner.run(queue, 'flow_ack', args);
    }
    if (second.length > 0) {
      const args: ScriptArgs['flow_ack'] = ['rechecked', second.length];
      for (const [seq] of second) args.push(seq);
      await this.runner.run(queue, 'flow_ack', args);
    }
  }

  /** Cancel the children (in their queues) that `w.queue`'s ended parents still awaited. */
  private async cancels(
    w: Extract<Work, { kind: 'cancels' }>,
    work: Work[],
    report: FlowCleanReport,
  ): Promise<void> {
    if (w.members.length === 0) return;
    const byQueue = new Map<string, Array<{ member: string; seq: string }>>();
    for (const member of w.members) {
      const m = /^(.*):(\d+)$/.exec(member);
      const q = m?.[1] ?? '';
      let g = byQueue.get(q);
      if (!g) byQueue.set(q, (g = []));
      g.push({ member, seq: m?.[2] ?? '' });
    }
    const done: string[] = [];
    const later: string[] = [];
    for (const [queue, g] of byQueue) {
      if (queue === '') {
        done.push(...g.map((x) => x.member)); // not a child key: nothing to cancel
        continue;
      }
      const args: ScriptArgs['flow_cancel'] = ['cancel', '', g.length, ...g.map((x) => x.seq)];
      // per seq 1 cancelled | 0 ended or gone | 2 running; then what it wrote
      const reply = (await this.runner.run(queue, 'flow_cancel', args)) as unknown[];
      g.forEach((x, i) => {
        const status = Number(reply[i]);
        (status === 2 ? later : done).push(x.member);
        if (status === 1) report.cancelled += 1;
      });
      if (wroteAny(reply, g.length)) work.push({ kind: 'flush', queue });
    }
    await this.runner.run(w.queue, 'flow_ack', ['cancels', done.length, ...done, ...later]);
  }
}

function emptyReport(): FlowCleanReport {
  return { notices: 0, cancelled: 0, reservationsDropped: 0 };
}

/**
 * Deliver what `queue` has to deliver after an operation that ended flow jobs (cancel, drain):
 * failures are logged, not thrown (the operation is done; clean() delivers what is left).
 */
export async function flushQuietly(
  d: FlowDelivery,
  queue: { readonly name: string },
  mode: 'now' | 'due',
): Promise<FlowCleanReport | undefined> {
  try {
    return await d.flush(queue.name, mode);
  } catch (e) {
    d.runner.options.logger?.warn(
      `queue ${queue.name}: flow work left for clean() to deliver: ${errorMessage(e)}`,
    );
    return undefined;
  }
}
