import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('worker smoke', () => {
  it('processes jobs added before and after it starts', async () => {
    const q = fx.queue<{ n: number }>();
    await q.addBulk(Array.from({ length: 100 }, (_, n) => ({ data: { n } })));
    const seen: number[] = [];
    const w = new Worker(
      q,
      (job) => {
        seen.push(job.data.n);
      },
      { concurrency: 10 },
    );
    w.on('error', (e) => console.error('worker error', e));
    await waitFor(() => seen.length === 100, { what: '100 jobs' });
    const t0 = Date.now();
    await q.add({ n: 1000 });
    await waitFor(() => seen.length === 101, { what: 'job added while idle' });
    console.log('idle add->handler', Date.now() - t0, 'ms');
    await w.close();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, workers: 0 });
  });
});
