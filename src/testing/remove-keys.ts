// removeKeys(): delete every key of a prefix (SCAN + UNLINK), after a test.
import type { Cluster, Redis } from 'ioredis';
import { redisError, within, WorkQueueError } from '../../lib/internal.js';
import {
  checkPositiveMs,
  checkPrefix,
  describe,
  invalidArgument,
  optionsProblems,
} from './checks.js';

const SCAN_COUNT = 1_000;
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Deletes every key under `prefix` (`<prefix>:{*`: every queue of that prefix, and not those of
 * a longer prefix that starts with it, e.g. `<prefix>:other`) and resolves how many there were.
 * Uses SCAN (never KEYS) and UNLINK; on a Cluster, every master — once the client has connected
 * and loaded the slot map, so a lazy or still-connecting client works too. Each wait for Redis
 * (connecting, each SCAN, each batch of UNLINK) is bounded by `timeoutMs` (default 10 s): past
 * it, `REDIS_UNAVAILABLE`. For the throwaway prefix of a test (`uniquePrefix()`): it deletes
 * whatever is there, jobs included, so close the workers of that prefix first.
 */
export async function removeKeys(
  client: Redis | Cluster,
  prefix: string,
  options: { timeoutMs?: number } = {},
): Promise<number> {
  const problems: string[] = [];
  if (typeof client !== 'object' || client === null || typeof client.scan !== 'function') {
    problems.push(`client must be an ioredis Redis or Cluster, got ${describe(client)}`);
  } else if (
    client.status === 'end' ||
    // Right after quit() or disconnect() the status may still be 'ready': ioredis marks the
    // client as closing at once (its own flag, on Redis and Cluster clients of ioredis 5 and 6).
    (client as unknown as { manuallyClosing?: boolean }).manuallyClosing === true
  ) {
    problems.push('client is closed (quit() or disconnect() was called): pass an open one');
  }
  checkPrefix('prefix', prefix, problems);
  problems.push(...optionsProblems(options, ['timeoutMs']));
  if (typeof options === 'object' && options !== null) {
    checkPositiveMs('timeoutMs', options.timeoutMs, problems, true);
  }
  if (problems.length > 0) throw invalidArgument('removeKeys', problems);

  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // The client's last connection error, for the message when Redis does not answer.
  let last = '';
  const heard = (e: unknown) => {
    const text = (x: unknown) => (x instanceof Error ? x.message : String(x));
    // (A Cluster that cannot load its slot map says why in lastNodeError.)
    const cause = (e as { lastNodeError?: unknown } | null)?.lastNodeError;
    last = `: ${text(e)}${cause ? ` (${text(cause)})` : ''}`;
  };
  const answer = <X>(what: string, call: Promise<X>): Promise<X> =>
    within(call, timeoutMs, () => {
      throw new WorkQueueError(
        'REDIS_UNAVAILABLE',
        `removeKeys: no reply from Redis to ${what} within ${timeoutMs} ms (connection ${client.status})${last}`,
      );
    });
  client.on('error', heard);
  const connected = whenReady(client);
  try {
    // A client not connected yet is connected first (its offline queue may be off). A Cluster
    // lists its masters only once connected and its slot map loaded: PING does both.
    if (client.isCluster)
      await answer(
        'PING',
        connected.ready.then(() => client.ping()),
      );
    else await answer('its connection handshake', connected.ready);
    const nodes: Redis[] = client.isCluster
      ? (client as Cluster).nodes('master')
      : [client as Redis];
    const removed = await Promise.all(nodes.map((node) => removeOn(node, `${prefix}:{*`, answer)));
    return removed.reduce((a, b) => a + b, 0);
  } catch (e) {
    throw redisError(`removeKeys(${prefix})`, e);
  } finally {
    connected.done();
    client.off('error', heard);
  }
}

/** Resolves once `client` is ready (connecting a lazy one); rejects if it ends first. */
function whenReady(client: Redis | Cluster): { ready: Promise<void>; done(): void } {
  if (client.status === 'ready') {
    return { ready: Promise.resolve(), done: () => undefined };
  }
  let done = () => undefined as void;
  const ready = new Promise<void>((resolve, reject) => {
    const onReady = () => (done(), resolve());
    const onEnd = () => (done(), reject(new Error('the connection ended before it was ready')));
    done = () => {
      client.off('ready', onReady);
      client.off('end', onEnd);
    };
    client.on('ready', onReady);
    client.on('end', onEnd);
  });
  if (client.status === 'wait') client.connect().catch(() => undefined); // (failures: 'error')
  return { ready, done: () => done() };
}

async function removeOn(
  node: Redis,
  pattern: string,
  answer: <X>(what: string, call: Promise<X>) => Promise<X>,
): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await answer(
      'SCAN',
      node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT),
    );
    cursor = next;
    if (keys.length === 0) continue;
    // One UNLINK per key: on a Cluster node the keys found may belong to different slots.
    const pipeline = node.pipeline();
    for (const key of keys) pipeline.unlink(key);
    for (const [err, n] of (await answer('UNLINK', pipeline.exec())) ?? []) {
      if (err) throw err;
      removed += Number(n);
    }
  } while (cursor !== '0');
  return removed;
}
