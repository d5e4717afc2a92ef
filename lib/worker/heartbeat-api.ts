// What a Worker sees of its heartbeat (heartbeat.ts: why a thread, the bridge beats, start-up).
import type { Cluster, Redis } from 'ioredis';
import type { QueueKeys } from '../redis/queue-keys.js';

export interface Heartbeat {
  /** Whether beats come from the shared thread (false: from the main thread, the fallback). */
  readonly threaded: boolean;
  /** Resolves once the thread's first beat for this worker landed (at once for the fallback). */
  readonly firstBeat: Promise<void>;
  /**
   * The grace a worker's registration should carry, as its first bridge beat (0: none needed,
   * it beats from the main thread for good).
   */
  readonly registrationGraceMs: number;
  /**
   * Start beating for the registered worker `workerId`; resolves once the first bridge beat
   * (covering the thread's start-up) has landed or failed. Lease only after it. `registered`:
   * its registration carried `registrationGraceMs`, and was that first bridge beat.
   */
  begin(workerId: string, registered?: boolean): Promise<void>;
  /**
   * Start the shared thread if none runs yet. Call it before the worker's first handler can
   * run (see above); beats asked for before it wait for the thread.
   */
  boot(): void;
  /**
   * The worker's client is connected again (a dropped connection, a Redis restart): beat from
   * the main thread, on that client, at once and every interval for `RECONNECT_BRIDGE_MS`
   * (heartbeat.ts). The thread's own connection reconnects on its own and may come back seconds
   * later (ioredis backs off up to 5 s, and waits up to 10 s for a Redis loading its data); a
   * worker whose beats stayed away that long while Redis was back for the others would be judged
   * dead — its jobs, finished ones whose completes are on their way included, given to other
   * workers.
   */
  reconnected(): void;
  /** Stop beating; resolves once no beat of this worker can land any more (bounded). */
  stop(): Promise<void>;
  /**
   * How long ago the thread died without a replacement's beat for this worker since (0: it
   * did not die, or a replacement beats; also 0 for a worker that never had a thread).
   */
  lostMs(): number;
  /** Where beats come from now: a thread whose beats landed, or the main thread. */
  source(): 'thread' | 'main thread';
}

/** What a heartbeat needs of its queue. */
export interface HeartbeatQueue {
  readonly client: Redis | Cluster;
  readonly keys: QueueKeys;
  readonly options: { readonly heartbeatTimeoutMs: number };
}
