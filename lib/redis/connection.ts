/**
 * Connections the core opens besides the caller's client (duplicates with the same options), and
 * what a connection through Redis Sentinel needs to follow the master when it moves, and the
 * reconnect options a queue's connection should have.
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { within } from '../util/timeout.js';

/** Longest pause between two reconnect attempts (RECONNECT_OPTIONS), before jitter. */
const RECONNECT_MAX_MS = 500;

/**
 * ioredis options that let a queue's connection resume soon after Redis is back (a restart, a
 * failover, a dropped connection): reconnect attempts 50 ms apart, then 100, 150… up to 500 ms
 * (plus up to 50 ms of jitter), instead of ioredis 6's default backoff (doubling up to 5 s, plus
 * up to 200 ms); and a Redis still loading its data (AOF, RDB) is asked again every 100 ms, not
 * after its own estimate of the load (a second at least, up to 10 s by default). The Nest module
 * gives them to the connections it creates; spread them into your own client's options
 * (`new Redis(url, { ...RECONNECT_OPTIONS })`). The core's own connections (a worker's blocking
 * wait and subscription) copy the client's options.
 */
export const RECONNECT_OPTIONS = {
  retryStrategy: (attempt: number): number =>
    Math.min(attempt * 50, RECONNECT_MAX_MS) + Math.floor(Math.random() * 50),
  maxLoadingRetryTime: 100,
} as const satisfies Partial<RedisOptions>;

/** Duck-typed, so that a Cluster from another copy of ioredis is recognised too. */
export function isCluster(c: Redis | Cluster): c is Cluster {
  return (c as { isCluster?: unknown }).isCluster === true;
}

/**
 * A new connection with the client's options (Cluster or not), plus `overrides` for each
 * connection (e.g. no re-sending of commands in flight when a connection drops). A duplicate of a
 * Sentinel client asks the sentinels for the master, as the client does, with the same options.
 */
export function duplicate(
  c: Redis | Cluster,
  overrides: Partial<RedisOptions> = {},
): Redis | Cluster {
  if (isCluster(c)) {
    return c.duplicate(undefined, {
      redisOptions: { ...c.options.redisOptions, ...overrides },
    });
  }
  return guardFailoverDetector(c.duplicate(overrides));
}

/**
 * A duplicate for pub/sub (a worker's notice channel, a queue's cancel acknowledgements) that
 * does not subscribe again by itself after a reconnect: its owner does, on 'ready', and handles
 * the answer. ioredis' own resubscription (6.0.0) leaves the SUBSCRIBE's promise unhandled: one
 * refused (an ACL without SUBSCRIBE, a Redis that fails over to a replica refusing it) was an
 * unhandled rejection in the application — a crash under Node's default. (A Cluster's subscriber
 * resubscribes on its own and handles the failure.)
 */
export function subscriber(c: Redis | Cluster): Redis | Cluster {
  return isCluster(c) ? duplicate(c) : duplicate(c, { autoResubscribe: false });
}

/**
 * Close a subscriber connection the core opened (subscriber()): QUIT, and if it has not ended
 * within `timeoutMs`, disconnect. Never rejects. Its owner stops subscribing again first (a
 * close that lands while a reconnection waits for its ready check still sees 'ready': the INFO
 * reply was sent before Redis saw the QUIT, and a SUBSCRIBE sent then fails with the socket).
 */
export async function closeSubscriber(c: Redis | Cluster, timeoutMs = 1_000): Promise<void> {
  if (c.status === 'end') return;
  if (c.status === 'reconnecting') return endNow(c); // (a QUIT would wait offline)
  await within(
    c.quit().catch(() => undefined),
    timeoutMs,
  );
  if ((c.status as string) !== 'end') endNow(c);
}

interface StreamInternals {
  stream?: { destroyed?: boolean; emit(event: 'close'): boolean };
  /** ioredis' own "reject every queued command" (ioredis 5 and 6). */
  flushQueue?(error: Error): void;
}

/**
 * `c.disconnect()`, ending the connection for good, now, with every command still waiting on it
 * rejected. Works around ioredis#1247 (ioredis 5 and 6): a standalone or Sentinel client
 * disconnected while it waits to reconnect stays 'reconnecting' for good, never emits 'end',
 * leaves its queued commands unsettled (a bounded wait on one held the process until its
 * deadline) and arms a 2 s timer on its last socket, closed already, which keeps the process
 * alive. Not through Sentinel: a connect() cut at once (its attempt opens no socket: it is checked
 * on the next tick) ends it as a disconnect() of a connecting client does: 'end', queued
 * commands rejected ("Connection is closed."). (Through Sentinel the attempt would first ask a
 * sentinel: it stays stuck, its queued commands rejected as ioredis rejects them on 'end' — they
 * held the process and their callers until their deadlines.) The stale socket's 'close', which
 * fired before the disconnect, is emitted to it again for the timers the disconnects armed on it
 * (their only listeners left). For a connection thrown away after: one ended this way keeps
 * ioredis' manuallyClosing flag (a later connect() would not reconnect after a drop).
 */
export function endNow(c: Redis | Cluster): void {
  const stuck = c.status === 'reconnecting' && !isCluster(c);
  const stale = stuck ? (c as unknown as StreamInternals).stream : undefined;
  c.disconnect(false);
  if (!stuck || (c.status as string) !== 'reconnecting') return;
  if (!sentinelLabel(c)) {
    c.connect().catch(() => undefined);
    c.disconnect(false);
  } else {
    (c as unknown as StreamInternals).flushQueue?.(new Error('Connection is closed.'));
  }
  if (stale?.destroyed) stale.emit('close');
}

interface DetectorInternals {
  connector?: { failoverDetector?: { isDisconnected?: boolean; cleanup?(): void } | null };
}
const guarded = new WeakSet<object>();

/**
 * Work around two bugs of ioredis' Sentinel failover detector (seen in 6.0.0, ioredis#1362):
 * - a detector outlives its connection: when the master dies, the client reconnects while the
 *   old detector still listens, and a `+switch-master` that arrives while the client asks a
 *   sentinel for the master ends the client for good (status `end`, no more reconnects) — a
 *   worker that silently stops;
 * - `quit()` leaves the detector's connections to the sentinels open, keeping the process alive.
 * Each time a connection of the client closes, its detector is closed too (the next connection
 * makes its own). Applied to the clients the core is given and every duplicate; idempotent, and a
 * no-op for other clients or where ioredis does it itself.
 */
export function guardFailoverDetector<C extends Redis | Cluster>(c: C): C {
  if (guarded.has(c) || !sentinelOptions(c)?.failover) return c;
  guarded.add(c);
  c.on('close', () => {
    const connector = (c as unknown as DetectorInternals).connector;
    const detector = connector?.failoverDetector;
    if (!connector || !detector) return;
    // Forgotten, so that ioredis does not close it again (which would arm a 2 s timer).
    connector.failoverDetector = null;
    if (!detector.isDisconnected) detector.cleanup?.();
  });
  return c;
}

/** A write sent to a node that is a replica now (the master moved): reconnect, send it again. */
const READONLY = /^READONLY\b/;

/**
 * ioredis options for a client that reaches Redis through Sentinel (docs/operations.md):
 * - `failoverDetector`: listen to the sentinels' `+switch-master` and reconnect at once. Without
 *   it, a client already connected to the old master keeps writing there until the sentinels
 *   demote it — about 10 s after the promotion (Sentinel waits 8 s before reconfiguring an old
 *   master that still says it is one) — and what it writes then is lost.
 * - `reconnectOnError`: a write refused with READONLY (a replica now) reconnects, asking the
 *   sentinels for the master again, and the refused command is sent again (it did not run) —
 *   not for a client made with `role: 'slave'`: it asks for a replica again, which refuses the
 *   write again (a reconnect loop with the cause lost); its writes fail as READONLY.
 * - `retryStrategy`: reconnect within a second at most (ioredis waits up to 5 s by default), so
 *   that a client finds the promoted master soon after a failover.
 * `WorkQueueModule` uses them for Sentinel connections it opens (your options win).
 */
export const SENTINEL_CLIENT_OPTIONS: Readonly<
  Pick<RedisOptions, 'failoverDetector' | 'reconnectOnError' | 'retryStrategy'>
> = Object.freeze({
  failoverDetector: true,
  // (ioredis calls it as a method of the client's options: `this` is them.)
  reconnectOnError(this: RedisOptions | undefined, e: Error) {
    return READONLY.test(e.message) && this?.role !== 'slave' ? 2 : false;
  },
  retryStrategy: (times: number) => Math.min(50 * times, 1_000),
});

/** The Sentinel options of a client (duck-typed: a client from another copy of ioredis too). */
function sentinelOptions(
  c: Redis | Cluster,
):
  | { sentinels: Array<{ host?: string; port?: number }>; name: string; failover: boolean }
  | undefined {
  const o = (c as { options?: RedisOptions }).options;
  if (!o || !Array.isArray(o.sentinels) || o.sentinels.length === 0) return undefined;
  return { sentinels: o.sentinels, name: String(o.name), failover: o.failoverDetector === true };
}

const CLOSED = /^Connection is closed\.$/;

/** `host:port` of a sentinel as ioredis reads it (its defaults: localhost, 26379). */
const sentinelAddress = (s: { host?: string; port?: number }) =>
  `${s.host ?? 'localhost'}:${s.port ?? 26379}`;

/** "Redis Sentinel master 'name' (sentinels a:1, b:2)", or undefined for other clients. */
export function sentinelLabel(c: Redis | Cluster): string | undefined {
  const s = sentinelOptions(c);
  if (!s) return undefined;
  return `Redis Sentinel master '${s.name}' (sentinels ${s.sentinels.map(sentinelAddress).join(', ')})`;
}

/**
 * What each sentinel said while a Sentinel client could not find its master (ioredis reports
 * each failure as a 'sentinelError' event): `host:port` → the last reason.
 */
export function watchSentinels(c: Redis | Cluster): { stop(): void; reasons(): string } {
  const byAddress = new Map<string, string>();
  const listener = (e: unknown) => {
    const m = String((e as { message?: unknown } | null)?.message ?? e);
    const unreachable = /^failed to connect to sentinel (\S+) because (.*)$/s.exec(m);
    const invalid = /^connected to sentinel (\S+) successfully, but got an invalid reply/.exec(m);
    // (ioredis says "Connection is closed." for a sentinel it could not connect to.)
    if (unreachable)
      byAddress.set(unreachable[1]!, unreachable[2]!.replace(CLOSED, 'cannot connect'));
    else if (invalid) byAddress.set(invalid[1]!, 'does not know that master name');
  };
  c.on('sentinelError', listener);
  return {
    stop: () => void c.off('sentinelError', listener),
    reasons: () => [...byAddress].map(([a, why]) => `${a}: ${why}`).join('; '),
  };
}

/**
 * Why a Sentinel client has no connection, in one line naming the master and the sentinels
 * (`reasons` from watchSentinels, `last` the client's last error); undefined for other clients.
 */
export function sentinelTrouble(
  c: Redis | Cluster,
  reasons: string,
  last: string | undefined,
): string | undefined {
  const label = sentinelLabel(c);
  if (!label) return undefined;
  if (reasons) return `${label}: no sentinel gave the master's address (${reasons})`;
  return last ? `${label}: ${last}` : label;
}

/**
 * A warning for a Sentinel client built without `failoverDetector` (see SENTINEL_CLIENT_OPTIONS),
 * else undefined.
 */
export function sentinelWarning(c: Redis | Cluster, what: string): string | undefined {
  const s = sentinelOptions(c);
  if (!s || s.failover) return undefined;
  return `${what}: this Sentinel client has no failoverDetector: after a failover it keeps writing to the old master until the sentinels demote it (about 10 s), and those writes are lost. Build it with { ...SENTINEL_CLIENT_OPTIONS, sentinels, name } (docs/operations.md#redis-sentinel).`;
}
