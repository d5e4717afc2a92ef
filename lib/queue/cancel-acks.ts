/**
 * The canceller's side of cancel acknowledgements (see lib/scripts/cancel.lua): when a live
 * worker holds a cancelled job, `cancel()` resolves only once that worker has said it will never
 * start it — so no handler starts after `cancel()` resolved. The worker answers by setting the
 * acknowledgement's key and publishing its id; the canceller subscribes (one connection per
 * queue, opened on demand and closed when no cancel has waited for a while), then checks the key
 * (an answer that came before the subscription), then waits for the message. Bounded.
 */
import type { Cluster, Redis } from 'ioredis';
import { within } from '../util/timeout.js';
import { closeSubscriber, duplicate } from '../redis/connection.js';
import type { QueueKeys } from '../keys.js';

/** How long the connection stays open after the last wait (a burst of cancels shares it). */
const LINGER_MS = 2_000;

export class CancelAcks {
  private sub: Redis | Cluster | undefined;
  private subscribed: Promise<void> | undefined;
  private readonly waiting = new Map<string, () => void>();
  private linger: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Redis | Cluster,
    private readonly keys: QueueKeys,
    private readonly timeoutMs: number,
  ) {}

  /** Resolves once the holder acknowledged cancel `ackId`, or after the timeout. Never rejects. */
  async wait(ackId: string): Promise<void> {
    clearTimeout(this.linger);
    const heard = new Promise<void>((resolve) => this.waiting.set(ackId, resolve));
    try {
      await within(
        (async () => {
          await this.subscribe();
          if ((await this.client.exists(this.keys.cancelAck(ackId))) === 1) return;
          await heard;
        })().catch(() => undefined),
        this.timeoutMs,
      );
    } finally {
      this.waiting.delete(ackId);
      if (this.waiting.size === 0) {
        this.linger = setTimeout(() => void this.close(), LINGER_MS);
        this.linger.unref();
      }
    }
  }

  private subscribe(): Promise<void> {
    if (this.subscribed) return this.subscribed;
    const sub = duplicate(this.client);
    sub.on('error', () => undefined); // reconnects by itself; waits are bounded
    sub.on('message', (_channel: string, ackId: string) => this.waiting.get(ackId)?.());
    this.sub = sub;
    const subscribed = sub.subscribe(this.keys.cancelAckChannel).then(() => undefined);
    subscribed.catch(() => {
      if (this.subscribed === subscribed) this.subscribed = undefined;
    });
    this.subscribed = subscribed;
    return subscribed;
  }

  /** Close the connection, if open. */
  async close(): Promise<void> {
    clearTimeout(this.linger);
    const sub = this.sub;
    this.sub = undefined;
    this.subscribed = undefined;
    if (sub) await closeSubscriber(sub);
  }
}
