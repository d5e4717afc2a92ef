// The connections of the heartbeat thread (heartbeat-thread.ts): how a Worker's connection
// configuration reaches it, whether its plain client can speak over it, and where it finds
// ioredis when it cannot.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';

/**
 * How the thread finds ioredis, which it loads only for a Cluster or Sentinel connection (or
 * options its plain client does not know, see `plainOptions`). lib/ never asks for its own module URL (the CommonJS build has no such thing), so it
 * cannot resolve from its own location; it resolves 'ioredis' the way the application does: from
 * the application's entry script (`process.argv[1]`), else from the working directory. An app
 * whose ioredis is nowhere on disk (a single-file bundle) and that needs it gets no thread: its
 * Workers beat from the main thread, and say so once each through their 'error' outlet.
 */
export function ioredisPath(): string {
  const bases = [process.argv[1], join(process.cwd(), 'noop.js')].filter(
    (b): b is string => typeof b === 'string' && b !== '',
  );
  const problems: string[] = [];
  for (const base of bases) {
    try {
      return createRequire(base).resolve('ioredis');
    } catch (e) {
      problems.push(`from ${base}: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`heartbeat thread: cannot resolve ioredis (${problems.join('; ')})`);
}

/** A connection configuration, as the thread receives it; `key` tells configurations apart. */
export interface ConnectionSpec {
  readonly key: string;
  readonly cluster: boolean;
  readonly nodes: unknown;
  readonly options: unknown;
}

/** ioredis options the thread's plain client applies itself. */
const APPLIED = ['host', 'port', 'path', 'family', 'tls', 'username', 'password', 'db'];
/**
 * ioredis options that change nothing a heartbeat sends or needs (client-side behaviour the
 * thread has its own version of: reconnects, timeouts, queues, reply shapes), or that matter
 * only with sentinels (which rule the plain client out).
 */
const IGNORED = [
  ...['connectionName', 'connectTimeout', 'commandTimeout', 'socketTimeout', 'keepAlive'],
  ...['noDelay', 'lazyConnect', 'enableReadyCheck', 'maxRetriesPerRequest', 'role'],
  ...['maxLoadingRetryTime', 'enableOfflineQueue', 'autoResubscribe', 'disconnectTimeout'],
  ...['autoResendUnfulfilledCommands', 'enableAutoPipelining', 'autoPipeliningIgnoredCommands'],
  ...['showFriendlyErrorStack', 'stringNumbers', 'protocol', 'replyMapping', 'clientInfoTag'],
  ...['disableClientInfo', 'blockingTimeoutGrace', 'himportFieldsets', 'retryStrategy'],
  ...['reconnectOnError', 'sentinelRetryStrategy', 'sentinelReconnectStrategy'],
  ...['sentinelMaxConnections', 'enableTLSForSentinelMode', 'updateSentinels'],
  ...['failoverDetector', 'preferredSlaves', 'sentinelCommandTimeout', 'sentinelTLS'],
  ...['sentinelUsername', 'sentinelPassword'],
];
const KNOWN = new Set([...APPLIED, ...IGNORED]);

/**
 * Whether the thread beats over this configuration with its plain client (no ioredis): a
 * standalone Redis (no Cluster, no sentinels) whose options set nothing outside KNOWN
 * (a keyPrefix, a natMap, a custom Connector, readOnly… bring ioredis in, as before).
 */
export function plainOptions(spec: Pick<ConnectionSpec, 'cluster' | 'options'>): boolean {
  if (spec.cluster || spec.options === null || typeof spec.options !== 'object') return false;
  const o = spec.options as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    const unset = v === undefined || v === null || v === false || v === '';
    if (!unset && !KNOWN.has(k)) return false;
  }
  return o.tls === undefined || o.tls === null || typeof o.tls === 'object';
}

/** Copy of `v` without functions (or anything else a thread cannot receive). */
function cloneable(v: unknown, depth = 0): unknown {
  if (depth > 6 || typeof v === 'function' || typeof v === 'symbol') return undefined;
  if (v === null || typeof v !== 'object') return v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return v;
  if (Array.isArray(v)) return v.map((x) => cloneable(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const c = cloneable(x, depth + 1);
    if (c !== undefined) out[k] = c;
  }
  return out;
}

/** The client's connection configuration (TLS, ACL user, Cluster nodes…) for the thread. */
export function connectionSpec(client: Redis | Cluster): ConnectionSpec {
  // Duck-typed: a Cluster from another copy of ioredis is not `instanceof` ours.
  const cluster = (client as { isCluster?: unknown }).isCluster === true;
  const nodes = cluster
    ? cloneable((client as unknown as { startupNodes: unknown }).startupNodes)
    : undefined;
  const options = cloneable(client.options);
  return { key: JSON.stringify([cluster, nodes, options]), cluster, nodes, options };
}
