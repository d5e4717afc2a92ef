// What every part of a worker shares: its queue, settings, state flags, outlets (events, errors)
// and the other parts, wired once by the Worker's constructor.
import { randomBytes } from 'node:crypto';
import type { RunHook } from '../types/hooks.js';
import type { WorkQueue } from '../queue/index.js';
import type { Handler, WorkerEvents } from '../types/worker.js';
import { LeaseProgress } from './liveness.js';
import type { WorkerSettings } from './options.js';
import type {
  CancelsPart,
  HandoffsPart,
  IdleWaitPart,
  LeaseLoopPart,
  QueuePausePart,
  RenewerPart,
  RunnerPart,
  RunTablePart,
} from './parts.js';

/** Longest wait for one Redis call of the worker's own bookkeeping. */
export const CALL_TIMEOUT_MS = 3_000;

export type Emit<T, R> = <K extends keyof WorkerEvents<T, R>>(
  event: K,
  ...args: WorkerEvents<T, R>[K]
) => void;

export class WorkerContext<T, R> {
  /** The worker's id in the queue's registry ('0' until registered). */
  id = '0';
  /** Names its registration: one re-sent after its reply was lost answers the same id. */
  readonly registration = randomBytes(9).toString('base64url');
  /**
   * Whether the lease loop may call Redis: from the end of start() (registered, its first beat
   * landed). A resume(), or a queue resumed, before it would lease as worker '0'.
   */
  started = false;
  paused = false;
  closing = false;
  /**
   * Whether leased jobs must not start now: this worker paused (`pause()`), or the queue, as far
   * as it knows (a hand-off or a lease reply that comes after a queue-wide pause goes back too).
   */
  get holding(): boolean {
    return this.paused || this.queuePause.paused;
  }
  /**
   * Whether a job that came now would start at once: a slot free (prefetched jobs fill slots
   * first), not holding nor closing. Only such a worker waits for work (docs/internals/hand-off.md).
   */
  get canStart(): boolean {
    const { runs } = this;
    // (A suspect job runs alone with us: nothing starts beside it.)
    return (
      !this.holding && !this.closing && runs.held < this.settings.concurrency && !runs.soloHeld()
    );
  }
  /** close() has resolved: nothing more is reported (calls it gave up on may fail later). */
  closed = false;
  /** Once close() drained: when its Redis calls' budget ends (Date.now() ms). */
  closeBy: number | undefined = undefined;
  /** Hooks around each handler call (`useRunHook`: tracing, metrics), outermost last. */
  readonly runHooks: RunHook[] = [];
  /** Calls close() must wait for (see track). */
  readonly inflight = new Set<Promise<unknown>>();
  /** Whether Redis answers the lease loop (read by liveness probes, liveness.ts). */
  readonly progress = new LeaseProgress();

  // The parts, set by the Worker's constructor.
  runs!: RunTablePart<T>;
  runner!: RunnerPart<T, R>;
  loop!: LeaseLoopPart<T, R>;
  idle!: IdleWaitPart;
  handoffs!: HandoffsPart<T>;
  cancels!: CancelsPart;
  renewer!: RenewerPart;
  queuePause!: QueuePausePart;

  constructor(
    readonly queue: WorkQueue<T, R>,
    readonly handler: Handler<T, R>,
    readonly settings: WorkerSettings,
    /** Emit an event; a listener's throw goes to `report`. */
    readonly emit: Emit<T, R>,
    /** Errors go to 'error' listeners, or to the queue's logger; never thrown. */
    readonly report: (e: unknown) => void,
  ) {}

  /** Keep track of a call that close() must wait for. */
  track<X>(p: Promise<X>): Promise<X> {
    this.inflight.add(p);
    const forget = () => this.inflight.delete(p);
    p.then(forget, forget);
    return p;
  }
}
