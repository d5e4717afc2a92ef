/**
 * What the fault suite records while it runs — the faults it injected, each planned job with its
 * add tries, the dead-letter set at the end — and how it names a job and a fault's window.
 */
import type { Behavior } from './handler.js';

export type FaultKind =
  | 'kill9'
  /** A worker process that died by itself (a handler called process.exit: a poison pill). */
  | 'crash'
  | 'sigterm'
  | 'redis-kill'
  | 'client-kill-normal'
  | 'client-kill-pubsub'
  | 'client-kill-id'
  | 'pause';

export interface Fault {
  kind: FaultKind;
  at: number;
  /** When the fault itself was over (Redis answering again, pause over, process gone). */
  back?: number;
  /**
   * End of the fault's effect window: until clients have reconnected and re-sent what was in
   * flight (ioredis backs off exponentially between reconnect attempts, with jitter).
   */
  end: number;
  /** For faults of one process. */
  pid?: number;
  /**
   * `queue\tid` of the jobs leased or handed off when the fault hit (read right after a
   * connection kill, right before a Redis kill): starts of these do not count as resuming.
   */
  held?: ReadonlySet<string>;
}

/** Faults that hit every client (not one process). */
export const GLOBAL_FAULTS: ReadonlySet<FaultKind> = new Set([
  'redis-kill',
  'client-kill-normal',
  'client-kill-pubsub',
  'client-kill-id',
  'pause',
]);

export interface AddTry {
  t: number;
  sent: number;
  settled: number;
  ok: boolean;
  added?: boolean;
  id?: string;
  err?: string;
}

export interface JobRec {
  queue: string;
  k: string;
  cid: boolean;
  b: Behavior;
  ms: number;
  priority: number;
  delayMs?: number;
  bulk: boolean;
  tries: AddTry[];
  ackId?: string;
  ackAt?: number;
  cancel?: { sent: number; settled: number; result: boolean | 'error' };
}

export interface DeadEntry {
  queue: string;
  id: string;
  reason: string;
}

/** `queue\tid`: a job as the logs, the held sets of faults and the stored results name it. */
export const key = (queue: string, id: string) => `${queue}\t${id}`;

/** Whether the fault's window (from its start to `end`) meets [from, to]. */
export function overlaps(f: Fault, from: number, to: number): boolean {
  return f.at <= to && f.end >= from;
}
