// Worker.close(): stop leasing, drain running jobs up to a timeout, give back the rest,
// deregister — within one budget for the Redis calls, so it resolves also with Redis down.
import { WorkQueueError } from '../errors.js';
import { within } from '../util/timeout.js';
import { CALL_TIMEOUT_MS, type WorkerContext } from './context.js';

export interface CloseParts {
  /** How long running jobs may take to finish. */
  timeoutMs: number;
  /** The worker's start, if it began (close waits for it only so long). */
  started: Promise<void> | undefined;
  /** Stop timers, the heartbeat, the worker's own connections, and start closing sandboxes. */
  releaseConnections(): Promise<void>;
  /**
   * The sandboxes closed (a job that ignores its abort may take its abortGraceMs): waited for
   * last, not out of the Redis calls' budget.
   */
  sandboxesClosed(): Promise<void> | undefined;
}

/**
 * Stop leasing, wait for running jobs up to `timeoutMs`, then release the unfinished ones to the
 * front of the queue and abort their signals; give back what Redis says we hold besides; deregister
 * and close connections. Never rejects.
 */
export async function closeWorker<T, R>(
  ctx: WorkerContext<T, R>,
  { timeoutMs, started, releaseConnections, sandboxesClosed }: CloseParts,
): Promise<void> {
  const { runs, loop, idle, handoffs } = ctx;
  ctx.closing = true;
  loop.stop();
  // No more hand-offs to us (one waiting for us goes back in line, ahead of what we release
  // later, which was leased before it); prefetched jobs go back at once, so other workers can
  // take them while we drain.
  idle.unpark();
  void runs.release();
  await idle.end();
  if (started)
    await within(
      started.catch(() => undefined),
      CALL_TIMEOUT_MS,
    );
  if (runs.active > 0) await within(runs.drained(), timeoutMs);
  // Whatever still runs goes back to the front; its outcome no longer counts.
  const left = runs.runs();
  for (const r of left) runs.end(r, { kind: 'abandoned', reason: 'worker closing' });
  // The Redis calls below share one budget: with Redis unreachable each would otherwise wait
  // out its own timeout (several seconds in all); this way close() resolves about
  // CALL_TIMEOUT_MS after the drain. Connections (heartbeat first) are released meanwhile.
  const end = Date.now() + CALL_TIMEOUT_MS;
  ctx.closeBy = end; // (outcomes still being told give up then: Runner.told)
  const budget = () => Math.max(0, end - Date.now());
  const connectionsReleased = releaseConnections();
  // Adopt hand-offs first (with the last completes): only then are they ours to release.
  await within(loop.flush(), budget());
  if (left.length > 0) {
    const owned = await within(Promise.all(left.map((r) => handoffs.adopted(r.lease))), budget());
    const leases = left.filter((_, i) => owned?.[i] === true).map((r) => r.lease);
    // (Lines a renewal on its way carries keep the lease until it answered: Run.linesOut.)
    await within(Promise.all(left.map((r) => r.linesOut)), budget());
    const released = await within(
      ctx.queue.release(leases).catch((e: unknown) => ctx.report(e)),
      budget(),
    );
    if (!released)
      ctx.report(
        new WorkQueueError(
          'REDIS_UNAVAILABLE',
          `close: could not release ${left.length} job(s); clean() will reclaim them`,
        ),
      );
  }
  const flushed = await within(
    loop.flush().then(() => true),
    budget(),
  );
  const told = await within(Promise.allSettled([...ctx.inflight]), budget());
  // Fails and steps still being told (Redis was out of reach): within the budget.
  const settled = await within(
    runs.settledAll().then(() => true),
    budget(),
  );
  // Hand-offs the closing flush could not adopt are not ours: their lease lapses.
  handoffs.abandon();
  // The heartbeat has stopped before the worker leaves, so no late beat registers it again.
  await connectionsReleased;
  let answeredAll = flushed === true && told !== undefined && settled !== undefined;
  if (ctx.id !== '0') {
    // Leases Redis still gives us that we do not know of are none we will finish: a lease call
    // whose reply was lost, or came after its timeout (Redis paused), left them. Back to the
    // front before we leave (on the same connection: after that call, if Redis runs it late),
    // not when they lapse. (Known: a run whose outcome is still on its way keeps its lease.)
    const answered = (e?: unknown) => {
      if (e !== undefined) ctx.report(e);
      return true;
    };
    const reconciled = await within(
      ctx.queue.reconcile(ctx.id, runs.tokens()).then(() => answered(), answered),
      budget(),
    );
    const deregistered = await within(
      ctx.queue.deregisterWorker(ctx.id, ctx.registration).then(() => answered(), answered),
      budget(),
    );
    answeredAll &&= reconciled === true && deregistered === true;
  }
  // What Redis has not answered by now is told once here; its late failures (the connection
  // closed after us) are not: a closed worker reports nothing more (WorkerContext.closed).
  if (!answeredAll)
    ctx.report(
      new WorkQueueError(
        'REDIS_UNAVAILABLE',
        `close: Redis did not answer within ${CALL_TIMEOUT_MS} ms: a job whose outcome was not told runs again once its lease lapses; the worker's registration lapses with its heartbeat`,
      ),
    );
  await sandboxesClosed();
  ctx.closed = true;
}

/**
 * A start that close() stopped waiting for went on and registered: release what it opened and
 * leave (close() left only if the registration had landed by then; leaving twice is harmless).
 */
export async function abandonStart<T, R>(
  ctx: WorkerContext<T, R>,
  releaseConnections: () => Promise<void>,
): Promise<void> {
  await releaseConnections();
  await within(
    ctx.queue.deregisterWorker(ctx.id, ctx.registration).catch((e: unknown) => ctx.report(e)),
    CALL_TIMEOUT_MS,
  );
}
