// How long each Redis connection of the module has been unable to reach Redis, for isAlive():
// from the connection's events (closed, not ready again) and from the checks' own pings (a
// connection can look open while Redis does not answer).
import { performance } from 'node:perf_hooks';
import type { Cluster, Redis } from 'ioredis';

/** Statuses of a connection that is not reaching Redis now. */
export const UNREACHABLE_STATUSES = new Set(['close', 'end', 'reconnecting']);

/** One connection's reachability (listeners on its `close`/`ready` events until `detach`). */
export class Reachability {
  /** Closed and not ready again since (performance.now()). */
  private lostAt: number | undefined;
  /** The first failed ping since the last answered one. */
  private failingSince: number | undefined;
  private readonly onClose = () => {
    this.lostAt ??= performance.now();
  };
  private readonly onReady = () => {
    this.lostAt = undefined;
    this.failingSince = undefined;
  };

  constructor(readonly client: Redis | Cluster) {
    if (UNREACHABLE_STATUSES.has(client.status)) this.lostAt = performance.now();
    client.setMaxListeners(client.getMaxListeners() + 1);
    client.on('close', this.onClose);
    client.on('ready', this.onReady);
  }

  /** When a ping was last answered (in time or late): Redis was reachable then. */
  private answeredAt = -Infinity;

  /**
   * A check pinged at `sentAt`: Redis answered in time, or not (then not since `sentAt`, or
   * since its last answer if that came later). Called again when a ping given up on is answered
   * late: an outage ended then, and a later one counts from its own first failed ping, not from
   * this one's (two short outages are not one long one).
   */
  probed(answered: boolean, sentAt: number): void {
    if (answered) {
      this.answeredAt = performance.now();
      this.failingSince = undefined;
    } else this.failingSince ??= Math.max(sentAt, this.answeredAt);
  }

  /** How long the connection has not reached Redis (0: it does). */
  unreachableMs(now = performance.now()): number {
    const since = Math.min(this.lostAt ?? now, this.failingSince ?? now);
    return Math.round(now - since);
  }

  detach(): void {
    this.client.off('close', this.onClose);
    this.client.off('ready', this.onReady);
    this.client.setMaxListeners(Math.max(10, this.client.getMaxListeners() - 1));
  }
}
