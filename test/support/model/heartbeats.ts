/**
 * The registered workers of the reference model (test/support/model/model.ts) and their
 * heartbeats: which of them a clean() at a given Redis time finds lapsed, kept as
 * lib/scripts/heartbeat.lua and the lapsed() of reclaim.lua judge them.
 */
import { MODEL_QUEUE } from './types.js';

export class Heartbeats {
  /** Registered workers (only dying clients register) -> last heartbeat. */
  readonly workers = new Map<string, number>();
  private lastBeat: number | undefined;
  private judgedSince = 0;
  /** When a clean first found no beat landed for half a timeout (see lapsed() in reclaim.lua). */
  private lookedAt = 0;

  /**
   * A worker registered (or beat) at Redis time `at`. When no beat at all landed for a heartbeat
   * timeout before it, heartbeats are judged only from `at` on (Redis may have been out of
   * reach: see lib/scripts/heartbeat.lua).
   */
  beat(wid: string, at: number): void {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.lastBeat !== undefined && at - this.lastBeat > hb) this.judgedSince = at;
    this.lastBeat = at;
    this.workers.set(wid, at);
  }

  /**
   * A lease renewal at Redis time `at` counts as its worker's heartbeat too (extend_leases.lua:
   * a registered worker's score, never lowered).
   */
  renewed(wid: string, at: number): void {
    const beat = this.workers.get(wid);
    if (beat !== undefined && at > beat) this.workers.set(wid, at);
  }

  /**
   * A clean() at Redis time `now`: the workers it finds lapsed (`lapsedWorkers`), and when it
   * first looked at a silence of every beat noted.
   */
  cleanAt(now: number): string[] {
    const lapsed = this.lapsedWorkers(now);
    if (this.firstLookAt(now)) this.lookedAt = now;
    return lapsed;
  }

  /** When the first look at the silence noted now was (0: none yet). */
  get looked(): number {
    return this.lookedAt;
  }

  /**
   * Whether a clean (or a cancel that asks whether a holder lapsed) at `now` is the first look at
   * a silence of every beat past half a timeout: it judges nobody, and notes when it looked.
   */
  firstLookAt(now: number): boolean {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.workers.size === 0 || this.judgedSince > now - hb) return false;
    const last = this.lastBeat ?? 0;
    return now - last > hb / 2 && this.lookedAt <= last;
  }

  /**
   * A first look Redis noted at `q` (read back from the heartbeat record: its time is exact) by
   * a cancel that asked whether a holder lapsed.
   */
  lookNoted(q: number): void {
    if (!this.firstLookAt(q))
      throw new Error(`Redis noted a first look at a silence at ${q}; the model sees none then`);
    this.lookedAt = q;
  }

  /** Workers whose heartbeat lapsed at `now`, in the order clean() finds them. */
  lapsedWorkers(now: number): string[] {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.judgedSince > now - hb) return [];
    const last = this.lastBeat ?? 0;
    if (now - last > hb / 2 && (this.lookedAt <= last || now - this.lookedAt < hb / 2)) return [];
    return [...this.workers]
      .filter(([, beat]) => beat < now - MODEL_QUEUE.heartbeatTimeoutMs)
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .map(([wid]) => wid);
  }

  /** Redis times at which a worker's heartbeat lapses. */
  lapseTimes(): number[] {
    return [...this.workers.values()].map((beat) => beat + MODEL_QUEUE.heartbeatTimeoutMs + 1);
  }

  /** Redis times at which a silence of every beat may be judged. */
  silenceTimes(): number[] {
    const t: number[] = [];
    if (this.judgedSince > 0) t.push(this.judgedSince + MODEL_QUEUE.heartbeatTimeoutMs + 1);
    if (this.lookedAt > (this.lastBeat ?? 0))
      t.push(this.lookedAt + Math.ceil(MODEL_QUEUE.heartbeatTimeoutMs / 2));
    return t;
  }
}
