/**
 * Bounded waits on Redis: every queue operation gets an answer, or a typed error, within a time
 * the user sets (`commandTimeoutMs`), whatever the client's own retry options are.
 */
import type { Cluster, Redis } from 'ioredis';
import { WorkQueueError } from '../errors.js';
import { within } from '../util/timeout.js';
import { sentinelLabel, sentinelTrouble, watchSentinels } from './connection.js';

type Client = Redis | Cluster;

/** The last connection error of a client, heard by one listener however many calls wait. */
interface ErrorWatch {
  waiting: number;
  last?: string;
  listener(e: unknown): void;
  /** A Sentinel client: what each sentinel said. */
  sentinels?: ReturnType<typeof watchSentinels>;
}
const errorWatches = new WeakMap<Client, ErrorWatch>();

function watchErrors(client: Client): ErrorWatch {
  let w = errorWatches.get(client);
  if (!w) {
    const watch: ErrorWatch = {
      waiting: 0,
      listener: (e: unknown) => {
        const m = (e as { message?: unknown } | null)?.message;
        watch.last = typeof m === 'string' ? m : String(e);
      },
    };
    errorWatches.set(client, watch);
    w = watch;
  }
  if (w.waiting++ === 0) {
    w.last = undefined;
    client.on('error', w.listener);
    if (sentinelLabel(client)) w.sentinels = watchSentinels(client);
  }
  return w;
}

function unwatchErrors(client: Client, w: ErrorWatch): void {
  if (--w.waiting === 0) {
    client.off('error', w.listener);
    w.sentinels?.stop();
    w.sentinels = undefined;
  }
}

/**
 * Run `send` against `client`, answered within `timeoutMs`: no reply by then (Redis down,
 * reconnecting, or not answering) → `REDIS_UNAVAILABLE` naming the client's last connection
 * error (for a Sentinel client: the master's name, the sentinels and what each said). The
 * command is sent at once, so the client's own retry options (e.g. a small
 * `maxRetriesPerRequest`) can fail it sooner; a command that timed out here may still run if
 * the client sends it once the connection is back — the message says so.
 */
export function bounded<X>(
  client: Client,
  timeoutMs: number,
  context: string,
  send: () => Promise<X>,
  /** What may still run if it reconnects (the message says): default "the command". */
  pending = 'the command may still run if it reconnects',
): Promise<X> {
  const watch = client.status !== 'ready' ? watchErrors(client) : undefined;
  let call: Promise<X>;
  try {
    call = send();
  } catch (e) {
    if (watch) unwatchErrors(client, watch);
    return Promise.reject(e);
  }
  // (A late failure of the call is not unhandled: within() listens to it.)
  const answer = within(call, timeoutMs, () => {
    const sentinel = sentinelTrouble(client, watch?.sentinels?.reasons() ?? '', watch?.last);
    const last = sentinel ?? watch?.last;
    const why = last ? `: ${last}` : '';
    throw new WorkQueueError(
      'REDIS_UNAVAILABLE',
      `${context}: no reply from Redis within ${timeoutMs} ms (connection ${client.status}; ${pending})${why}`,
    );
  });
  return watch ? answer.finally(() => unwatchErrors(client, watch)) : answer;
}

/**
 * What is left of `timeoutMs` since `since` (performance.now()) for the last step of a bounded
 * operation (its start-up check came first), in whole ms. Less than a quarter of it:
 * REDIS_UNAVAILABLE, the step not sent — sent with so little time, a reply late but on its way
 * would reject a call that ran (a caller retrying it without a caller id adds twice).
 */
export function timeLeft(timeoutMs: number, since: number, context: string): number {
  const left = Math.ceil(timeoutMs - (performance.now() - since));
  if (left >= timeoutMs / 4) return left;
  throw new WorkQueueError(
    'REDIS_UNAVAILABLE',
    `${context}: Redis answered its start-up check too slowly to send it within ${timeoutMs} ms (nothing sent)`,
  );
}
