// The module's Redis clients: made from validated connection options, told apart when two
// registrations of one queue are compared, and closed at shutdown.
import { Cluster, Redis } from 'ioredis';
import { RECONNECT_OPTIONS, SENTINEL_CLIENT_OPTIONS, endNow, within } from '../../lib/internal.js';
import type { WorkQueueConnectionOptions } from '../interfaces/work-queue-module-options.interface.js';

const QUIT_TIMEOUT_MS = 1_000;

/** A client for validated connection options (owned ones lazy: nothing connects yet). */
export function connect(c: WorkQueueConnectionOptions): Redis | Cluster {
  if (c.client !== undefined) return c.client;
  // Resume soon after Redis is back (RECONNECT_OPTIONS), unless told otherwise.
  if (c.url !== undefined) return new Redis(c.url, { lazyConnect: true, ...RECONNECT_OPTIONS });
  // Sentinel: follow the master when a failover moves it (SENTINEL_CLIENT_OPTIONS; yours win).
  if (c.sentinels !== undefined) {
    return new Redis({ lazyConnect: true, ...RECONNECT_OPTIONS, ...SENTINEL_CLIENT_OPTIONS, ...c });
  }
  if (c.redis !== undefined) {
    const sentinel = c.redis.sentinels === undefined ? {} : SENTINEL_CLIENT_OPTIONS;
    return new Redis({ lazyConnect: true, ...RECONNECT_OPTIONS, ...sentinel, ...c.redis });
  }
  // ioredis gives up after ~1.6 s of redirections by default, shorter than a failover
  // (about cluster-node-timeout + a second): keep retrying ~10 s unless told otherwise.
  return new Cluster(c.cluster.nodes, {
    lazyConnect: true,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    maxRedirections: 50,
    ...c.cluster.options,
  });
}

const clientIds = new WeakMap<object, number>();
let lastClientId = 0;

/** Each secret seen, as a number: two registrations compare by it, a message shows only it. */
const secretIds = new Map<string, number>();
/** Options whose values are secrets: passwords, TLS keys and certificates. */
const SECRET_KEYS = /pass|secret|token|^key$|^pfx$|^cert$|^ca$/i;

function secret(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  let id = secretIds.get(text);
  if (id === undefined) secretIds.set(text, (id = secretIds.size + 1));
  return `<secret #${id}>`;
}

/** `v` with its secrets replaced (a URL's password, an option named like one). */
function redacted(v: unknown, key = ''): unknown {
  if (v === undefined || v === null) return v;
  if (SECRET_KEYS.test(key)) return secret(v);
  if (typeof v === 'string' && key === 'url') {
    return v.replace(/^([a-z]+:\/\/[^:/@]*:)([^@]*)@/i, (_m, head: string, pw: string) =>
      pw ? `${head}${secret(pw)}@` : `${head}@`,
    );
  }
  if (Array.isArray(v)) return v.map((x) => redacted(x));
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redacted(x, k)]));
  }
  return v;
}

/**
 * What identifies a connection when comparing two registrations of one queue, fit for an error
 * message: a client by a number, passwords and TLS secrets by a number each.
 */
export function connectionSignature(c: WorkQueueConnectionOptions): unknown {
  if (c.client === undefined) return redacted(c);
  let id = clientIds.get(c.client);
  if (id === undefined) clientIds.set(c.client, (id = ++lastClientId));
  return { client: id };
}

/**
 * QUIT, then wait for the socket to close. Calling disconnect() right after QUIT, on a socket
 * that may already be closed, would leave ioredis' 2 s "force close" timer behind.
 */
export async function closeClient(client: Redis | Cluster): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    // Not connected (lazy, connecting, reconnecting): nothing to say goodbye to.
    endNow(client);
    return;
  }
  const ended = await within(
    Promise.race([
      new Promise<boolean>((resolve) => client.once('end', () => resolve(true))),
      client.quit().then(
        () => new Promise<boolean>(() => undefined), // wait for 'end' (or the timeout)
        () => false,
      ),
    ]),
    QUIT_TIMEOUT_MS,
  );
  if (!ended && !isEnded(client)) endNow(client);
}

/** Read again after an await (the compiler would keep the narrowed status). */
function isEnded(client: Redis | Cluster): boolean {
  return client.status === 'end';
}
