// QueueEvents: a reader of a queue's event log — an EventEmitter and an async iterable — with
// blocking XREAD on a connection of its own; it resumes after its last entry when it reconnects.
import { EventEmitter } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import { invalid } from '../errors.js';
import { queueKeys } from '../redis/queue-keys.js';
import { checkName, clientProblems, QUEUE_DEFAULTS } from '../options.js';
import { duplicate, endNow } from '../redis/connection.js';
import { delay, within } from '../util/timeout.js';
import { parseEntry } from './parse.js';
import type { QueueEvent, QueueEventsEvents, QueueEventsOptions } from './types.js';
import { optionsObject, shown } from '../util/checks.js';

type XReadReply = [string, [string, string[]][]][] | null;

const STREAM_ID = /^\d+(-\d+)?$/;

export class QueueEvents extends EventEmitter<QueueEventsEvents> {
  /** The stream's key. */
  readonly key: string;
  private readonly conn: Redis | Cluster;
  private readonly blockMs: number;
  private readonly timeoutMs: number;
  private last: string | undefined;
  private closed = false;
  private readonly loop: Promise<void>;
  private readonly started: Promise<void>;
  private markStarted!: () => void;
  private stopWaiting!: () => void;
  private readonly stopped = new Promise<void>((r) => (this.stopWaiting = r));
  /** Wakes of async iterators waiting for an event (or for the end). */
  private readonly wakes = new Set<() => void>();

  constructor(redis: Redis | Cluster, queue: string, options: QueueEventsOptions = {}) {
    super();
    const problems: string[] = clientProblems(redis);
    checkName('queue name', queue, problems);
    const known = ['prefix', 'from', 'blockMs', 'commandTimeoutMs'];
    const o: QueueEventsOptions = optionsObject('options', options, known, problems);
    if (o.prefix !== undefined) checkName('prefix', o.prefix, problems);
    const from = o.from ?? '$';
    if (from !== '$' && (typeof from !== 'string' || !STREAM_ID.test(from))) {
      problems.push(`from must be '$', '0' or a stream id, got ${shown(from)}`);
    }
    for (const k of ['blockMs', 'commandTimeoutMs'] as const) {
      const v = o[k];
      if (v !== undefined && !(Number.isInteger(v) && v > 0)) {
        problems.push(`${k} must be a positive integer, got ${shown(v)}`);
      }
    }
    if (problems.length > 0) throw invalid(problems, 'invalid QueueEvents options');
    this.key = queueKeys(o.prefix ?? QUEUE_DEFAULTS.prefix, queue).eventLog;
    this.blockMs = o.blockMs ?? 5_000;
    this.timeoutMs = o.commandTimeoutMs ?? QUEUE_DEFAULTS.commandTimeoutMs;
    if (from !== '$') this.last = from === '0' ? '0-0' : from;
    this.started = new Promise<void>((r) => (this.markStarted = r));
    if (this.last !== undefined) this.markStarted();
    this.conn = duplicate(redis);
    this.conn.on('error', () => {
      /* reconnects by itself; a read it drops is retried by the loop */
    });
    this.loop = this.run();
  }

  /** The id of the last entry delivered (pass it as `from` to resume in a new reader). */
  get lastId(): string | undefined {
    return this.last;
  }

  /**
   * Resolves once the reader knows where it starts (with `from: '$'`, after reading the log's
   * last id): every event logged after that is delivered. Bounded by `timeoutMs` (default: the
   * command timeout); resolves false when it did not get there in time or was closed.
   */
  async ready(timeoutMs = this.timeoutMs): Promise<boolean> {
    if (this.closed) return false;
    const r = await within(
      Promise.race([this.started, this.stopped]).then(() => true),
      timeoutMs,
    );
    return r === true && !this.closed && this.last !== undefined;
  }

  /** Stop reading and close the connection. Bounded; always resolves. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWaiting();
    for (const w of this.wakes) w();
    endNow(this.conn);
    await within(this.loop, 1_000);
  }

  /** Every event from now on, in order, until close(). Buffers what its consumer has not taken. */
  [Symbol.asyncIterator](): AsyncIterator<QueueEvent> {
    const buffered: QueueEvent[] = [];
    let wake: (() => void) | undefined;
    const wakeUp = () => wake?.();
    const onEvent = (e: QueueEvent) => {
      buffered.push(e);
      wakeUp();
    };
    this.on('event', onEvent);
    this.wakes.add(wakeUp);
    const end = (): IteratorResult<QueueEvent> => {
      this.off('event', onEvent);
      this.wakes.delete(wakeUp);
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        while (buffered.length === 0) {
          if (this.closed) return end();
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
        return { done: false, value: buffered.shift()! };
      },
      return: () => Promise.resolve(end()),
    };
  }

  private async run(): Promise<void> {
    let backoff = 50;
    while (!this.closed) {
      try {
        if (this.last === undefined) {
          this.last = await this.tail();
          this.markStarted();
        }
        const reply = await this.bounded(
          this.conn.xread(
            'BLOCK',
            this.blockMs,
            'STREAMS',
            this.key,
            this.last,
          ) as Promise<XReadReply>,
          this.blockMs,
        );
        if (reply) for (const [, entries] of reply) for (const e of entries) this.deliver(e);
        backoff = 50;
      } catch (e) {
        if (this.closed) break;
        this.report(e);
        await Promise.race([delay(backoff), this.stopped]);
        backoff = Math.min(backoff * 2, 1_000);
      }
    }
  }

  /** The id of the log's last entry ('0-0' when empty). */
  private async tail(): Promise<string> {
    const r = await this.bounded(this.conn.xrevrange(this.key, '+', '-', 'COUNT', 1), 0);
    return r[0]?.[0] ?? '0-0';
  }

  /**
   * A reply within `extraMs` plus the command timeout; else the connection is cut and made
   * again (its unanswered commands fail) and the loop tries again from the last entry.
   */
  private async bounded<X>(p: Promise<X>, extraMs: number): Promise<X> {
    const r = await within(
      Promise.race([p.then((value) => ({ value })), this.stopped.then(() => 'closed' as const)]),
      extraMs + this.timeoutMs,
    );
    if (r === 'closed') throw new Error(`QueueEvents ${this.key}: closed`);
    if (r === undefined) {
      if (!this.closed) this.conn.disconnect(true);
      throw new Error(`QueueEvents ${this.key}: no reply from Redis in time`);
    }
    return r.value;
  }

  /** Emit the events of one entry, then move past it (events of an entry are never split). */
  private deliver([id, fields]: [string, string[]]): void {
    if (this.closed) return;
    for (const e of parseEntry(id, fields)) {
      this.emitSafe(e.kind, e);
      this.emitSafe('event', e);
    }
    this.last = id;
  }

  private emitSafe(name: keyof QueueEventsEvents, e: QueueEvent): void {
    try {
      (this.emit as (n: string, e: QueueEvent) => boolean)(name, e);
    } catch (err) {
      this.report(err);
    }
  }

  private report(e: unknown): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', e);
      } catch {
        /* an error listener that throws: nothing more to tell */
      }
    }
  }
}
