// A Worker's heartbeat: the assembled `heartbeat` script (lib/scripts/heartbeat.lua), beaten by
// the process's one shared heartbeat thread (heartbeat-thread.ts), bridged from the main thread.
import { performance } from 'node:perf_hooks';
import { script, scriptKeys, scriptShape } from '../scripts/assemble.js';
import { callScript, defineScripts, type ScriptArgs } from '../scripts/define.js';
import { within } from '../util/timeout.js';
import type { Heartbeat, HeartbeatQueue } from './heartbeat-api.js';
import { connectionSpec } from './heartbeat-thread-connections.js';
import { heartbeatThread, type ThreadMember } from './heartbeat-thread.js';

/*
 * Why a thread: a handler blocking the main event loop must not make a live process look dead.
 * The heartbeat is sent from a worker thread with its own Redis connection (one per distinct
 * connection configuration), and one such thread serves every Worker of every queue in the
 * process: each Worker registers with it by message, keeps its own interval and its own "first
 * beat landed" promise, and unregisters on close; the thread ends when the last Worker leaves
 * and never keeps the process alive. Its connection to a standalone Redis is a plain socket
 * (RESP over net/tls, heartbeat-thread-code.ts); a Cluster or Sentinel connection is ioredis,
 * loaded in the thread. If a Worker cannot join (the thread cannot start, or its connection
 * needs ioredis and none is on disk: see heartbeat-thread.ts), it beats from the main thread
 * for good and reports it through its 'error' outlet. If it dies, each Worker reports it, beats from the main thread and starts a
 * new thread (after REPLACE_FIRST_MS, doubling up to REPLACE_MAX_MS while replacements fail);
 * `lostMs` says how long it has gone without a thread's beat since (a liveness probe reads it:
 * a thread that cannot be replaced is a reason to restart the process).
 *
 * Honest about what it proves: the heartbeat says "this process is alive", not "this job makes
 * progress". A main thread stuck forever keeps beating, so its jobs are not reclaimed early — but
 * the main thread also stops renewing their leases, so they are reclaimed when their leases
 * expire. Liveness of jobs is the lease's business; liveness of the process is the heartbeat's.
 *
 * Start-up, and why a Worker leases at once (no wait for the thread's first beat): the Worker
 * joins the thread when it starts, and starts it (`boot()`, if none runs) in the same turn of
 * the event loop as its first lease call, so that the thread's boot (CPU-heavy: a V8 isolate)
 * does not compete with the ready check and registration — but before any reply can start a
 * handler. Once started it boots, connects and beats on its own OS thread: a handler blocking
 * the main event loop cannot delay it (the registration message is queued on the thread's port
 * synchronously). Until the thread's first beat for a worker lands, the main thread
 * beats for it too (the bridge), and each bridge beat counts `STARTUP_GRACE × heartbeatTimeoutMs`
 * into the future (heartbeat.lua; never lowering the score). The worker's registration is its
 * first bridge beat (worker_registry.lua: the same grace, in the same script), landed before it
 * leases, so when a first handler
 * blocks the event loop the worker stays alive for (1 + STARTUP_GRACE) × heartbeatTimeoutMs
 * without any further beat: that is the time the thread has to boot, connect and land its first
 * beat — more than the old start ("wait for the first beat, at most heartbeatTimeoutMs") gave
 * it, without holding the first job back. The price: a process killed before its thread's first
 * beat is seen dead that much later. A second Worker finds the thread running and connected.
 *
 * After a reconnect (a dropped connection, a Redis restart) the main thread bridges again, for
 * a while (`reconnected`): the thread's connection comes back on its own schedule, and until it
 * does only the worker's client — back already, leasing and completing — can say it is alive.
 */
/** A bridge beat keeps the worker alive this many heartbeat timeouts longer (see above). */
const STARTUP_GRACE = 2;
/** A dead thread's replacement starts this long after the death, doubling up to the max. */
const REPLACE_FIRST_MS = 100;
const REPLACE_MAX_MS = 30_000;
/**
 * After its client reconnected, a worker beats from the main thread this long too (see
 * `reconnected`): ioredis' longest reconnect backoff (5 s) plus its default wait for a Redis
 * loading its data (10 s), the longest the thread's own connection may take to be back.
 */
const RECONNECT_BRIDGE_MS = 15_000;

class WorkerHeartbeat implements Heartbeat {
  readonly firstBeat: Promise<void>;
  private beaten!: () => void;
  private member: ThreadMember | undefined;
  private workerId: string | undefined;
  /** Main-thread beats: the bridge until the thread's first beat, or the fallback. */
  private timer: NodeJS.Timeout | undefined;
  private inflight: Promise<unknown> | undefined;
  private stopping: Promise<void> | undefined;
  private readonly timeoutMs: number;
  /** In a join: a failure then is reported by the join's throw. */
  private joining = false;
  /** A thread's beat for this worker has landed (a thread that never did cannot be lost). */
  private served = false;
  /** When the thread died, until a replacement's first beat (performance.now()). */
  private lostAt: number | undefined;
  /** Replacements that failed since the last death, and the timer of the next one. */
  private replaceAttempts = 0;
  private replaceTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly queue: HeartbeatQueue,
    private readonly intervalMs: number,
    private readonly onError: (e: unknown) => void,
  ) {
    this.timeoutMs = queue.options.heartbeatTimeoutMs;
    this.firstBeat = new Promise<void>((resolve) => (this.beaten = resolve));
    try {
      this.member = this.join(true);
    } catch (e) {
      onError(e);
    }
  }

  private join(deferStart: boolean): ThreadMember {
    this.joining = true;
    try {
      return heartbeatThread(script('heartbeat').lua).join(
        connectionSpec(this.queue.client),
        (e) => this.threadFailed(e),
        deferStart,
      );
    } finally {
      this.joining = false;
    }
  }

  get threaded(): boolean {
    return this.member !== undefined;
  }

  get registrationGraceMs(): number {
    return this.member ? this.timeoutMs * STARTUP_GRACE : 0;
  }

  async begin(workerId: string, registered = false): Promise<void> {
    if (this.stopping || this.workerId !== undefined) return;
    this.workerId = workerId;
    const keys = scriptKeys(scriptShape('heartbeat'), this.queue.keys, { workerId });
    if (this.member) {
      // Bridge beats: their failures are not reported, the thread's beats are the ones that count.
      const grace = this.timeoutMs * STARTUP_GRACE;
      const first = this.mainBeats(() => undefined, grace, undefined, !registered);
      this.threadBeats(this.member, keys);
      await first;
    } else {
      void this.mainBeats(this.onError);
      this.beaten();
    }
  }

  /** Beat from the thread; at its first beat, the main thread's beats stop. */
  private threadBeats(member: ThreadMember, keys: string[]): void {
    member.beat(keys, [this.workerId!, this.timeoutMs], this.intervalMs, () => {
      clearInterval(this.timer);
      this.served = true;
      this.lostAt = undefined;
      this.replaceAttempts = 0;
      this.beaten();
    });
  }

  boot(): void {
    this.member?.boot();
  }

  /**
   * Beat from the main thread every interval (with `grace`: at once too, unless not `now`;
   * resolves that beat; with `until`: at once too, and only until then).
   */
  private mainBeats(
    report: (e: unknown) => void,
    grace?: number,
    until?: number,
    now = true,
  ): Promise<unknown> {
    clearInterval(this.timer);
    const client = defineScripts(this.queue.client);
    const keys = scriptKeys(scriptShape('heartbeat'), this.queue.keys, { workerId: this.workerId });
    const args: ScriptArgs['heartbeat'] = [this.workerId!, this.timeoutMs];
    if (grace !== undefined) args.push(grace);
    const beat = () => {
      if (until !== undefined && Date.now() > until) clearInterval(this.timer);
      else if (this.inflight) return;
      else
        this.inflight = callScript(client, 'heartbeat', keys, args)
          .catch(report)
          .finally(() => (this.inflight = undefined));
    };
    this.timer = setInterval(beat, this.intervalMs);
    this.timer.unref();
    if ((grace === undefined && until === undefined) || !now) return Promise.resolve();
    beat();
    return this.inflight ?? Promise.resolve();
  }

  reconnected(): void {
    // Main-thread beats already run: the start-up bridge, or the fallback.
    if (this.stopping || this.workerId === undefined || !this.member || !this.served) return;
    // Bridge beats: their failures are not reported, the thread's beats are the ones that count.
    void this.mainBeats(() => undefined, undefined, Date.now() + RECONNECT_BRIDGE_MS);
  }

  /** The thread died (or failed to start): beat from the main thread, and start a new one. */
  private threadFailed(e: unknown): void {
    this.member = undefined;
    if (this.stopping || this.joining) return;
    this.onError(e);
    if (this.served) this.lostAt ??= performance.now();
    if (this.workerId !== undefined) void this.mainBeats(this.onError);
    this.beaten();
    this.replaceLater();
  }

  private replaceLater(): void {
    if (this.stopping || this.replaceTimer) return;
    const ms = Math.min(REPLACE_MAX_MS, REPLACE_FIRST_MS * 2 ** this.replaceAttempts++);
    this.replaceTimer = setTimeout(() => {
      this.replaceTimer = undefined;
      this.replace();
    }, ms);
    this.replaceTimer.unref();
  }

  /** Join a new thread (started now, if none runs); main-thread beats go on until it beats. */
  private replace(): void {
    if (this.stopping || this.member) return;
    let member: ThreadMember;
    try {
      member = this.join(false);
    } catch {
      this.replaceLater(); // reported with the death; the main thread beats meanwhile
      return;
    }
    this.member = member;
    if (this.workerId === undefined) return; // begin() beats from it
    const keys = scriptKeys(scriptShape('heartbeat'), this.queue.keys, { workerId: this.workerId });
    this.threadBeats(member, keys);
    // Dies before its first beat: threadFailed tries again later.
  }

  lostMs(): number {
    return this.lostAt === undefined ? 0 : Math.round(performance.now() - this.lostAt);
  }

  source(): 'thread' | 'main thread' {
    return this.member && this.served && this.lostAt === undefined ? 'thread' : 'main thread';
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearTimeout(this.replaceTimer);
      clearInterval(this.timer);
      this.beaten();
      await Promise.all([this.member?.leave(), within(this.inflight ?? Promise.resolve(), 1_000)]);
    })();
    return this.stopping;
  }
}

/**
 * Join the process's heartbeat thread for a worker of `queue` (starting the thread if it is the
 * first), beating every `intervalMs` once `begin(workerId)` is called. Falls back to main-thread
 * beats (`threaded: false`, the reason reported through `onError`) if the thread cannot start.
 */
export function joinHeartbeat(
  queue: HeartbeatQueue,
  intervalMs: number,
  onError: (e: unknown) => void,
): Heartbeat {
  return new WorkerHeartbeat(queue, intervalMs, onError);
}
