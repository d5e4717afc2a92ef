// The worker's side of a RateLimitError's hold (docs/flow-control.md): lease replies that reach
// the worker while the hold is being told, or that were sent before Redis had it, hold jobs
// leased before the hold; those of a held group must not start (they go back).
import { performance } from 'node:perf_hooks';

interface Hold {
  /** The group held (undefined: an ungrouped job's RateLimitError holds the whole queue). */
  group: string | undefined;
  /** When Redis' answer to the tell came (performance.now()); undefined while in flight. */
  toldAt: number | undefined;
}

export class LimitHolds {
  private holds: Hold[] = [];

  /** @param keepMs how long a told hold still screens replies of calls sent before it. */
  constructor(private readonly keepMs: number) {}

  /** Hold `group` until the returned function is called (once: the tell's answer, or giving up). */
  hold(group: string | undefined): () => void {
    const h: Hold = { group, toldAt: undefined };
    this.holds.push(h);
    return () => {
      h.toldAt = performance.now();
    };
  }

  /**
   * Whether a job of `group`, in the reply to a lease call sent at `sentAt` (performance.now()),
   * was leased before a hold of its group landed in Redis: a call sent before the tell's answer
   * came (a reply read after that answer may still be in the worker: payloads read by a second
   * round trip). Only while some hold is told or recent.
   */
  held(group: string | undefined, sentAt: number): boolean {
    if (this.holds.length === 0) return false;
    const now = performance.now();
    this.holds = this.holds.filter((h) => h.toldAt === undefined || now - h.toldAt < this.keepMs);
    return this.holds.some(
      (h) =>
        (h.group === undefined || h.group === group) &&
        (h.toldAt === undefined || sentAt < h.toldAt),
    );
  }
}
