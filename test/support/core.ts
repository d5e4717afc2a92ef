/**
 * Helpers for the core integration tests (test/integration/core/).
 */
import { expect } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue, WorkQueueError } from '../../lib/index.js';
import type { WorkQueueOptions } from '../../lib/index.js';
import { commandStats } from './commandstats.js';
import type { QueueFixture } from './queue.js';
import { keysMatching } from './keys.js';
import { getFreePort } from './redis-server.js';

/** Redis server time in ms (the clock every deadline and due time is measured against). */
export async function redisNow(client: Redis): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The rejection of `p` (fails the test if `p` resolves). */
export async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection, but it resolved');
}

/**
 * The problems of the refusal of `call`: a WorkQueueError (INVALID_ARGUMENT or INVALID_OPTIONS,
 * or, with `anyCode`, any code: a payload's ENCODE_FAILED lists the option problems too).
 */
export async function problemsOf(call: () => unknown, anyCode = false): Promise<readonly string[]> {
  const e = await errorOf(async () => call());
  expect(e).toBeInstanceOf(WorkQueueError);
  if (!anyCode)
    expect(['INVALID_ARGUMENT', 'INVALID_OPTIONS']).toContain((e as WorkQueueError).code);
  return (e as WorkQueueError).problems;
}

/**
 * The same queue as `q` (same name, prefix and kept completed jobs) on a fresh connection of the
 * fixture, e.g. for several concurrent clients of one queue.
 */
export function sameQueue<T, R>(
  fx: QueueFixture,
  q: WorkQueue<T, R>,
  options: WorkQueueOptions = {},
): WorkQueue<T, R> {
  const keep = q.options.keepCompleted;
  return new WorkQueue<T, R>(fx.client(), q.name, {
    logger: false,
    keepCompleted: keep.count > 0 ? keep : false,
    ...options,
    prefix: q.options.prefix,
  });
}

/**
 * Count every command a client sends (all of them go through `sendCommand`, scripts too).
 * `names` lists them in order, lower case.
 */
export function countCommands(client: Redis): { names: string[]; readonly count: number } {
  const names: string[] = [];
  const original = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    names.push(String(command.name).toLowerCase());
    return (original as (...a: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return {
    names,
    get count() {
      return names.length;
    },
  };
}

/**
 * A client that can never reach Redis: lazy, pointed at a port that nothing listens on, no
 * offline queue, no retries. Any command it is asked to send fails at once.
 */
export async function offlineClient(): Promise<Redis> {
  const port = await getFreePort();
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
  });
  client.on('error', () => {
    // failures are asserted through command results
  });
  return client;
}

/** Sum of `calls` for the given commands in `INFO commandstats` (server-wide counters). */
export async function commandCalls(client: Redis, commands: readonly string[]): Promise<number> {
  const stats = await commandStats(client);
  return commands.reduce((total, cmd) => total + (stats[cmd] ?? 0), 0);
}

/** Keys of a queue relative to its base (`<prefix>:{<queue>}:`), sorted. */
export function relativeKeys(base: string, keys: readonly string[]): string[] {
  return keys.map((k) => (k.startsWith(base) ? k.slice(base.length) : `(foreign) ${k}`)).sort();
}

/**
 * The keys a queue keeps once its jobs are gone, relative to its base, sorted: a producer's
 * record of its add calls (`ik:<session>`, shown as `ik:*`) must expire by itself within a
 * minute (see lib/scripts/add.lua), so its TTL is checked here.
 */
export async function keysLeft(client: Redis, base: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of await keysMatching(client, `${base}*`)) {
    const rel = key.slice(base.length);
    // (Add-call records, cancel calls' answers, registrations' ids and cancelled leases'
    // acknowledgement ids: they expire by themselves.)
    const expiring = ['ik:', 'cc:', 'cx:', 'wr:'].find((p) => rel.startsWith(p));
    if (expiring) {
      const ttl = await client.pttl(key);
      if (ttl <= 0 || ttl > 60_000) throw new Error(`${key} has TTL ${ttl} ms, not 1..60000`);
      out.push(`${expiring}*`);
    } else out.push(rel);
  }
  return [...new Set(out)].sort();
}
