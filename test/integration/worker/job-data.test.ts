/**
 * A job's data after its handler succeeded: the Worker lets the decoded data go while the
 * outcome is on its way to Redis (lib/worker/job.ts, releaseData) and decodes it again from the
 * stored payload if it is read — by a 'completed' listener, or by the handler's code later. Every
 * path a job takes to a handler (leased, handed off to an idle worker, leased by reference with
 * large payloads) and every codec reads the same data then; `updateData`'s data stays; the job
 * still shows its data to console.log and JSON.stringify.
 */
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Job, WorkQueueOptions } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { waitParked, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

interface Seen<T> {
  inHandler: T;
  job: Job<T>;
  inListener?: T;
}

/** Run `datas` through a worker; what each job's handler and its 'completed' listener saw. */
async function run<T>(
  datas: T[],
  path: 'leased' | 'handed off',
  options: WorkQueueOptions = {},
): Promise<Seen<T>[]> {
  const q = fx.queue<T, void>(options);
  const seen = new Map<string, Seen<T>>();
  const start = () => {
    const w = worker(q, (job) => {
      seen.set(job.id, { inHandler: job.data, job });
    });
    w.on('completed', (job) => (seen.get(job.id)!.inListener = job.data));
    return w;
  };
  const ids: string[] = [];
  if (path === 'leased') {
    for (const r of await q.addBulk(datas.map((data) => ({ data })))) ids.push(r.id);
    start();
  } else {
    const w = start();
    await w.start();
    // One at a time, each to the parked worker (a hand-off: the add carries the job to it).
    for (const data of datas) {
      await waitParked(fx.client(), q, w.workerId);
      const { id } = await q.add(data);
      ids.push(id);
      await waitFor(() => seen.get(id)?.inListener !== undefined, { what: `job ${id} completed` });
    }
  }
  await waitFor(() => ids.every((id) => seen.get(id)?.inListener !== undefined), {
    timeoutMs: 10_000,
    what: 'every job completed',
  });
  const out = ids.map((id) => seen.get(id)!);
  // (A handed-off job's lease starts when it was added.)
  for (const s of out) expect(s.job.startedAt === s.job.addedAt).toBe(path === 'handed off');
  return out;
}

describe("a job's data after its handler succeeded", () => {
  const small = Array.from({ length: 20 }, (_, i) => ({ i, tags: ['a', `t${i}`] }));
  const large = Array.from({ length: 20 }, (_, i) => ({ i, pad: `${i}:`.padEnd(8_000, 'é') }));

  it.each([
    ['leased', small],
    ['handed off', small.slice(0, 3)],
    ['leased', large], // (by reference: payloads of 2 KiB or more)
    ['handed off', large.slice(0, 3)],
  ] as const)(
    '%s: the listener reads the same data, decoded again (not the object the handler had)',
    async (path, datas) => {
      const seen = await run<object>([...datas], path);
      seen.forEach((s, i) => {
        expect(s.inHandler).toEqual(datas[i]);
        expect(s.inListener).toEqual(datas[i]);
        // Let go after the handler: what the listener reads was decoded anew.
        expect(s.inListener).not.toBe(s.inHandler);
        // Read again, the job keeps what it decoded.
        expect(s.job.data).toBe(s.inListener);
      });
    },
  );

  it("codecs 'string' and 'buffer' read the same values again", async () => {
    const strings = ['plain', 'ünïcödé ✓', ''];
    const seenS = await run<string>(strings, 'leased', { codec: 'string' });
    expect(seenS.map((s) => s.inListener)).toEqual(strings);
    const bytes = [Buffer.from([0, 255, 128, 7]), Buffer.alloc(3_000, 0xfe)];
    const seenB = await run<Buffer>(bytes, 'handed off', { codec: 'buffer' });
    seenB.forEach((s, i) => expect(Buffer.compare(s.inListener!, bytes[i]!)).toBe(0));
  });

  it("a handler's later read gets the data; updateData's data is what stays", async () => {
    const q = fx.queue<{ n: number }, void>();
    const later: Array<Promise<{ n: number }>> = [];
    const w = worker(q, async (job) => {
      if (job.data.n === 2) await job.updateData({ n: 20 });
      // Read after the handler returned (and the job completed).
      later.push(new Promise((resolve) => setTimeout(() => resolve(job.data), 200)));
    });
    const completed: Array<{ n: number }> = [];
    w.on('completed', (job) => completed.push(job.data));
    await q.addBulk([{ data: { n: 1 } }, { data: { n: 2 } }]);
    await waitFor(() => completed.length === 2 && later.length === 2, { what: 'both completed' });
    expect(completed).toEqual([{ n: 1 }, { n: 20 }]);
    expect(await Promise.all(later)).toEqual([{ n: 1 }, { n: 20 }]);
  });

  it('console.log and JSON.stringify show the data of a completed job', async () => {
    const [s] = await run([{ secretless: 'visible', n: 7 }], 'leased');
    const job = s!.job;
    expect(inspect(job)).toContain("secretless: 'visible'");
    const json = JSON.parse(JSON.stringify(job)) as Record<string, unknown>;
    expect(json).toMatchObject({ id: job.id, data: { secretless: 'visible', n: 7 } });
  });
});
