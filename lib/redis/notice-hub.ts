/**
 * The subscriber connections of the Workers' notice channels: one per process for every Worker
 * whose client connects alike (the same class and ioredis options: host, port, credentials,
 * database…; a function or an object other than a plain one or a Buffer — a retry strategy, a
 * TLS secure context — the same one), whatever queue it serves, not one per Worker. A Worker
 * joins with its queue's channel and a listener; each message goes to the listeners of its
 * channel, and the connection's drops, reconnections and end go to every listener (each
 * subscribes again itself: ioredis' resubscription is off, see subscriber()). The connection
 * closes when its last Worker leaves. A Cluster client's Workers keep a subscriber each (its
 * subscriber follows the slots' nodes on its own).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { closeSubscriber, isCluster, subscriber } from './connection.js';

/** What a Worker hears of its notice channel and of the connection under it. */
export interface NoticeListener {
  /** A message published on its channel. */
  message(message: string): void;
  /** The connection dropped: what is published now is lost. */
  dropped(): void;
  /** The connection is back (not subscribed to anything: subscribe again). */
  ready(): void;
  /** The connection ended for good (its retry strategy gave up). */
  ended(): void;
}

/** `f(l)`; one listener that throws does not keep the notice from the others (thrown later). */
function tell(l: NoticeListener, f: (l: NoticeListener) => void): void {
  try {
    f(l);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

class Hub {
  readonly channels = new Map<string, Set<NoticeListener>>();
  members = 0;

  constructor(
    readonly conn: Redis | Cluster,
    private readonly key: string | undefined,
  ) {
    conn.on('error', () => {
      /* reconnects by itself; each listener subscribes again on 'ready' */
    });
    conn.on('close', () => this.each((l) => l.dropped()));
    conn.on('ready', () => this.each((l) => l.ready()));
    conn.on('end', () => {
      this.unlist();
      this.each((l) => l.ended());
    });
    conn.on('message', (channel: string, message: string) => {
      const listeners = this.channels.get(channel);
      if (listeners) for (const l of [...listeners]) tell(l, (x) => x.message(message));
    });
  }

  /** Each listener hears `f`. */
  private each(f: (l: NoticeListener) => void): void {
    for (const listeners of [...this.channels.values()]) for (const l of [...listeners]) tell(l, f);
  }

  /** No longer the one new Workers join (it closes, or it ended). */
  unlist(): void {
    if (this.key !== undefined && hubs.get(this.key) === this) hubs.delete(this.key);
  }
}

/** The shared hubs, by connection key (connectionKey). */
const hubs = new Map<string, Hub>();
/**
 * Ids of the functions and objects told apart by identity among clients' options and classes (a
 * retry strategy, a TLS secure context: JSON would write every context alike).
 */
const identities = new WeakMap<object, number>();
let lastIdentity = 0;

function identity(o: object): string {
  let id = identities.get(o);
  if (id === undefined) identities.set(o, (id = ++lastIdentity));
  return `\0#${id}`;
}

/** Whether JSON writes `value` down whole: a plain object, an array, a Buffer. */
function plain(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return (
    proto === Object.prototype || proto === null || Array.isArray(value) || Buffer.isBuffer(value)
  );
}

/**
 * The key of the connection a client's duplicate makes: its class and options (functions and
 * other than plain objects by identity), hashed; or undefined for a connection never shared (a
 * Cluster, options JSON cannot write: a cycle, a BigInt).
 */
function connectionKey(client: Redis | Cluster): string | undefined {
  if (isCluster(client)) return undefined;
  try {
    const text = JSON.stringify([identity(client.constructor), client.options], (_k, v: unknown) =>
      typeof v === 'function' || (typeof v === 'object' && v !== null && !plain(v))
        ? identity(v)
        : v,
    );
    return createHash('sha1').update(text).digest('base64');
  } catch {
    return undefined;
  }
}

/** A Worker's place on a notice connection: joinNotices(). */
export class NoticeMembership {
  private left = false;

  constructor(
    private readonly hub: Hub,
    private readonly channel: string,
    private readonly listener: NoticeListener,
  ) {}

  /** The connection (its status; a test's view of it). */
  get connection(): Redis | Cluster {
    return this.hub.conn;
  }

  /**
   * SUBSCRIBE the channel (again after a drop); rejects as ioredis does (refused, closed), and
   * once left.
   */
  subscribe(): Promise<unknown> {
    if (this.left) return Promise.reject(new Error(`notice channel ${this.channel}: left`));
    return this.hub.conn.subscribe(this.channel);
  }

  /**
   * Leave: no more messages nor connection events; the last member closes the connection
   * (bounded). Never rejects. Idempotent. (The channel stays subscribed while other members
   * keep the connection, its messages dropped here, until it reconnects: no UNSUBSCRIBE, which
   * the documented ACL does not grant.)
   */
  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    const { hub } = this;
    const listeners = hub.channels.get(this.channel);
    listeners?.delete(this.listener);
    if (listeners?.size === 0) hub.channels.delete(this.channel);
    if (--hub.members === 0) {
      hub.unlist();
      await closeSubscriber(hub.conn);
    }
  }
}

/**
 * Join the notice connection of `client`'s options (opened now if none is open) on `channel`,
 * heard by `listener` from now on. Subscribe with the membership's subscribe().
 */
export function joinNotices(
  client: Redis | Cluster,
  channel: string,
  listener: NoticeListener,
): NoticeMembership {
  const key = connectionKey(client);
  let hub = key === undefined ? undefined : hubs.get(key);
  if (hub === undefined || hub.conn.status === 'end') {
    hub = new Hub(subscriber(client), key);
    if (key !== undefined) hubs.set(key, hub);
  }
  hub.members++;
  let listeners = hub.channels.get(channel);
  if (!listeners) hub.channels.set(channel, (listeners = new Set()));
  listeners.add(listener);
  return new NoticeMembership(hub, channel, listener);
}
