/**
 * Job logs whose renewal is answered after the job's outcome was ready: the outcome (with the
 * rest of the lines) waits for that renewal, or it could reach Redis first — a renewal answered
 * NOSCRIPT (Redis lost its scripts: a restart, a failover) is sent again with its text, behind a
 * completion sent meanwhile by SHA — and the lease the renewal's lines need would be gone.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { DelayedError, RateLimitError, Worker, WorkQueue, type Job } from '../../../lib/index.js';
import { loadedScript } from '../../../lib/scripts/define.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { deferred } from '../../support/worker.js';

/** Which of these scripts `client` sends (by SHA or with their text), in order. */
function scriptsSent(client: Redis): string[] {
  const names = [
    'extend_leases',
    'complete_and_lease',
    'fail',
    'move_to_delayed',
    'rate_limited',
  ] as const;
  const byFirstArg = new Map<string, string>();
  for (const n of names) {
    byFirstArg.set(loadedScript(n).sha, n);
    byFirstArg.set(loadedScript(n).lua, n);
  }
  const sent: string[] = [];
  const original = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    if (command.name.startsWith('eval')) sent.push(byFirstArg.get(String(command.args[0])) ?? '?');
    return (original as (...a: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return sent;
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('job logs and the order of calls', () => {
  it.each([
    ['completes', 'completed'],
    ['fails', 'dead'],
    ['is delayed', 'delayed'],
    ['is rate limited', 'completed'],
  ] as const)(
    'a job that %s while a renewal carrying its lines waits for NOSCRIPT keeps every line',
    async (how, state) => {
      // A private Redis: SCRIPT FLUSH and CLIENT PAUSE would reach other files' tests.
      const redis = await startRedis();
      const client = new Redis(redis.url);
      const admin = new Redis(redis.url);
      const q = new WorkQueue<number>(client, uniqueName(), {
        logger: false,
        leaseMs: 600, // renewed every 200 ms
        maxAttempts: 1,
      });
      const first = deferred();
      const more = deferred();
      const logged = deferred();
      const go = deferred();
      const returned = deferred();
      let runs = 0;
      const w = new Worker(q, async (job: Job<number>) => {
        // (Rate limited: its second run logs 'again' and completes.)
        if (++runs === 2) return void (await job.log('again'));
        await job.log('a');
        first.resolve();
        await more.promise;
        await job.log('b');
        logged.resolve();
        await go.promise;
        await job.log('c');
        returned.resolve();
        if (how === 'fails') throw new Error('no');
        if (how === 'is delayed') throw new DelayedError(60_000);
        if (how === 'is rate limited') throw new RateLimitError(1);
      });
      try {
        const { id } = await q.add(1);
        await first.promise;
        // A renewal carried 'a': this client has sent its script (NOSCRIPT is then answered to
        // the SHA it sends next).
        await waitFor(async () => (await q.getJobLogs(id)).count === 1, { what: 'a renewal' });
        more.resolve();
        await logged.promise;
        // Redis loses its scripts; the outcome's is back (sent often, it is loaded again first),
        // the renewal's is not.
        await admin.script('FLUSH');
        const outcome = (
          {
            completes: 'complete_and_lease',
            fails: 'fail',
            'is delayed': 'move_to_delayed',
            'is rate limited': 'rate_limited',
          } as const
        )[how];
        await admin.script('LOAD', loadedScript(outcome).lua);
        const sent = scriptsSent(client);
        const renewals = () => sent.filter((n) => n === 'extend_leases').length;
        // Calls are held by Redis (scripts count as writes) until UNPAUSE, in the order sent.
        await admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
        try {
          await waitFor(() => renewals() === 1, { what: 'a renewal sent' });
          go.resolve();
          await returned.promise;
          // The outcome would be sent within a turn or two of the event loop (the lease loop
          // flushes completes on the next one); it must wait for the renewal's answer.
          await turns(20);
          expect(sent).toEqual(['extend_leases']);
        } finally {
          await admin.call('CLIENT', 'UNPAUSE');
        }
        await waitFor(async () => (await q.getJob(id))?.state === state, { what: state });
        // (A rate-limited run's lines not sent yet are dropped: 'c'.)
        const lines = how === 'is rate limited' ? ['a', 'b', 'again'] : ['a', 'b', 'c'];
        expect(await q.getJobLogs(id)).toEqual({ lines, count: lines.length, dropped: 0 });
      } finally {
        go.resolve();
        await w.close();
        await q.close();
        await client.quit();
        await admin.quit();
        await redis.dispose();
      }
    },
  );
});
