/**
 * A worker frozen (SIGSTOP) while the reply of one of its lease calls is still on its way: the
 * call leased a job before the freeze, clean() took it back during the freeze and another
 * completed it. Resumed, the worker sees the gap and sends a renewal; the lease reply, read only
 * after that renewal was sent, must not start its job on the renewal's word (it did not cover
 * it): a job leased by a call sent before a gap starts only after a renewal sent once it is held.
 * (lib/worker/lease-renewer.ts, `answered`.)
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import type { WorkQueueOptions } from '../../../lib/index.js';
import { replyHoldingProxy } from '../../support/reply-dropping-proxy.js';
import { waitFor } from '../../support/wait.js';
import { readLog } from '../../support/worker-child-process.js';
import { frozenWorkers } from './freeze-support.js';

const { fx, dir, startChild, completeHere, beatingWorker } = frozenWorkers();
const proxies: Array<{ close(): Promise<unknown> }> = [];
afterAll(async () => Promise.all(proxies.map((p) => p.close())));

describe('a frozen worker', () => {
  it('a lease reply read after the renewal that covers the freeze was sent: its job, completed elsewhere, never starts', async () => {
    const proxy = await replyHoldingProxy();
    proxies.push(proxy);
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'exec-inflight.log');
    for (let i = 1; i <= 3; i++) await q.add(String(i), { id: `p-${i}` });
    // Every connection of the child (its client, waits, notices, heartbeat) goes through the proxy.
    const child = startChild(q, queueOptions, {
      redisUrl: proxy.url,
      workerOptions: { concurrency: 1, prefetch: 1, cleanIntervalMs: 0 },
      mode: 'hold',
      execLog,
    });
    await child.ready;
    await beatingWorker(q);
    await waitFor(
      async () =>
        readLog(execLog).length === 1 &&
        (await q.getJob('p-2'))?.state === 'leased' &&
        (await q.getJob('p-3'))?.state === 'pending',
      { what: 'p-1 running, p-2 prefetched, p-3 waiting' },
    );
    // Redis' replies to the child are held from now on: p-1 returns, p-2 starts, and the call
    // that completes p-1 leases p-3 in Redis, its reply held.
    proxy.hold();
    child.process.kill('SIGUSR2');
    await waitFor(async () => (await q.getJob('p-3'))?.state === 'leased', {
      what: 'p-3 leased by the call whose reply is held',
    });
    await waitFor(() => readLog(execLog).length === 2, { what: 'p-2 started' });
    child.process.kill('SIGSTOP');
    await waitFor(async () => (await q.clean()).reclaimedFromWorkers > 0, {
      what: 'the frozen worker taken for dead, its jobs taken back',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await completeHere(q, ['p-2', 'p-3']);
    // The held replies go once the resumed child sends a call with its lease time (30 s, the
    // default): the renewal it sends on seeing the gap.
    proxy.releaseOn('30000');
    child.process.kill('SIGCONT');
    await q.add('y', { id: 'p-after' });
    await waitFor(() => readLog(execLog).some((l) => l.id === 'p-after' || l.id === 'p-3'), {
      what: 'the resumed worker starts another job',
      timeoutMs: 15_000,
    });
    expect(readLog(execLog).map((l) => l.id)).toEqual(['p-1', 'p-2', 'p-after']);
    expect(await q.getJob('p-3')).toMatchObject({ state: 'completed', attemptsMade: 1 });
  }, 40_000);
});
