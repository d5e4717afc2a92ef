/**
 * The canceller's side of cancel acknowledgements (see lib/scripts/cancel.lua): when a live
 * worker holds a cancelled job, `cancel()` resolves only once that worker has said it will never
 * start it — so no handler starts after `cancel()` resolved. The worker answers by setting the
 * acknowledgement's key and publishing its id; the canceller subscribes (one connection per
 * queue, opened on demand and closed when no cancel has waited for a while), then checks the key
 * (an answer that came before the subscription), then waits for the message. While it cannot
 * listen (its SUBSCRIBE refused or not answered, the connection dropped: a message then is
 * lost), it reads the keys of its waits instead, 50 ms apart and backing off to a second; while
 * it listens, once a second (a message can still be lost: a Cluster subscriber moved to another
 * node without a 'close'). Bounded: after the timeout a wait resolves unanswered.
 */
import type { Cluster, Redis } from 'ioredis';
import { within } from '../util/timeout.js';
import { closeSubscriber, subscriber } from '../redis/connection.js';
import type { QueueKeys } from '../redis/queue-keys.js';

/** How long the connection stays open after the last wait (a burst of cancels shares it). */
const LINGER_MS = 2_000;
/**
 * Reads of a wait's key while not listening: this far apart at first, doubling up to a second;
 * while listening, every POLL_MAX_MS.
 */
const POLL_FIRST_MS = 50;
const POLL_MAX_MS = 1_000;

export class CancelAcks {
  private sub: Redis | Cluster | undefined;
  /** A SUBSCRIBE is on its way. */
  private subscribing = false;
  /** Subscribed, and not dropped since: an answer published now reaches us. */
  private listening = false;
  private readonly waiting = new Map<string, () => void>();
  /** Waits to wake when `listening` changes. */
  private readonly wakers = new Set<() => void>();
  private linger: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: Redis | Cluster,
    private readonly keys: QueueKeys,
    private readonly timeoutMs: number,
  ) {}

  /** Resolves once the holder acknowledged cancel `ackId`, or after the timeout. Never rejects. */
  async wait(ackId: string): Promise<void> {
    clearTimeout(this.linger);
    let answered = false;
    const heard = new Promise<void>((resolve) =>
      this.waiting.set(ackId, () => {
        answered = true;
        resolve();
      }),
    );
    try {
      await within(
        (async () => {
          this.subscribe();
          // The key: an answer given before we listened, or while we could not, or whose
          // message was lost. Read again whenever we start or stop listening, and every
          // POLL_MAX_MS while listening.
          for (let pause = POLL_FIRST_MS; !answered;) {
            if (await this.acked(ackId)) return;
            await this.until(heard, this.listening ? POLL_MAX_MS : pause);
            if (!this.listening) pause = Math.min(pause * 2, POLL_MAX_MS);
          }
        })(),
        this.timeoutMs,
      );
    } finally {
      // (Timed out: `heard` settles and `answered` is set, so the loop ends, its waker gone.)
      this.waiting.get(ackId)?.();
      this.waiting.delete(ackId);
      if (this.waiting.size === 0) {
        this.linger = setTimeout(() => void this.close(), LINGER_MS);
        this.linger.unref();
      }
    }
  }

  /** Whether the acknowledgement's key is set (false when it could not be read). */
  private async acked(ackId: string): Promise<boolean> {
    try {
      return (await this.client.exists(this.keys.cancelAck(ackId))) === 1;
    } catch {
      return false;
    }
  }

  /** Resolves on `heard`, when `listening` changes, or after `ms`. */
  private until(heard: Promise<void>, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      void heard.then(done);
    });
  }

  private setListening(on: boolean): void {
    if (this.listening === on) return;
    this.listening = on;
    for (const wake of [...this.wakers]) wake();
  }

  /** Subscribe (opening the connection first), unless listening or on the way. Never rejects. */
  private subscribe(): void {
    if (this.listening || this.subscribing) return;
    const sub = this.sub ?? this.open();
    this.subscribing = true;
    sub
      .subscribe(this.keys.cancelAckChannel)
      .then(
        () => {
          if (this.sub === sub) this.setListening(true);
        },
        () => undefined, // refused or dropped: the waits read their keys
      )
      .finally(() => {
        if (this.sub === sub) this.subscribing = false;
      });
  }

  private open(): Redis | Cluster {
    const sub = subscriber(this.client);
    this.sub = sub;
    sub.on('error', () => undefined); // reconnects by itself; waits are bounded
    sub.on('message', (_channel: string, ackId: string) => this.waiting.get(ackId)?.());
    sub.on('close', () => {
      if (this.sub === sub) this.setListening(false);
    });
    // Back after a drop: subscribe again (ioredis' own resubscription is off: subscriber()).
    sub.on('ready', () => {
      if (this.sub === sub && this.waiting.size > 0) this.subscribe();
    });
    return sub;
  }

  /** Close the connection, if open. */
  async close(): Promise<void> {
    clearTimeout(this.linger);
    const sub = this.sub;
    this.sub = undefined;
    this.subscribing = false;
    this.setListening(false);
    if (sub) await closeSubscriber(sub);
  }
}
