/**
 * Administration of flows: cancelling a parent cancels its children (in their queues), drain and
 * obliterate of a queue tell the parents of its children in other queues and cancel the children
 * of its parents; batches and their progress.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { FlowFixture } from '../../support/flows.js';
import { keysMatching } from '../../support/keys.js';
import { keysButCounters } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred } from '../../support/worker.js';

const fx = new FlowFixture({ maxAttempts: 1 });
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

/**
 * A worker of `queue` busy with a job that runs until released, prefetching what comes next
 * (leased, not started). Its handler's runs are listed by job id.
 */
async function busyWorker(queue: string, addMore: () => Promise<unknown>) {
  const release = deferred();
  const ran: string[] = [];
  // The blocker, then what its first lease takes with it into its prefetch buffer (a busy worker
  // does not wait for jobs added later).
  await fx.queue(queue).add(0, { id: 'blocker' });
  await addMore();
  fx.worker(
    queue,
    async (job) => {
      ran.push(job.id);
      if (job.id === 'blocker') await release.promise;
    },
    { concurrency: 1, prefetch: 2 },
  );
  await waitFor(() => ran.length === 1, { what: 'the blocker running' });
  /** Release the blocker; once nothing is leased, the jobs that ran. */
  return async (): Promise<string[]> => {
    release.resolve();
    await waitFor(async () => (await fx.queue(queue).counts()).leased === 0, {
      what: 'the blocker done',
    });
    return ran;
  };
}

/** Wait until job `id` of `queue` is gone (`what` it means). */
const gone = (queue: string, id: string, what: string) =>
  waitFor(async () => (await fx.queue(queue).getJob(id)) === null, { what });

const leased = (queue: string, id: string) =>
  waitFor(async () => (await fx.queue(queue).getJob(id))?.state === 'leased', {
    what: `${id} prefetched`,
  });

describe('administration', () => {
  it('cancelling a parent cancels its waiting children, at every level below', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'c-top',
      data: 0,
      id: 'top',
      children: [
        { queue: 'c-kids', data: 1, id: 'k1' },
        {
          queue: 'c-mid',
          data: 2,
          id: 'mid',
          children: [{ queue: 'c-kids', data: 3, id: 'k3', delayMs: 60_000 }],
        },
      ],
    });
    expect(tree.job.id).toBe('top');
    expect(await fx.queue('c-top').cancel('top')).toBe(true);
    expect(await fx.queue('c-top').getJob('top')).toBeNull();
    expect(await fx.queue('c-mid').getJob('mid')).toBeNull();
    expect(await fx.queue('c-kids').getJob('k1')).toBeNull();
    expect(await fx.queue('c-kids').getJob('k3')).toBeNull();
    // Nothing of theirs is left behind.
    for (const q of ['c-top', 'c-mid']) {
      expect(await fx.queue(q).counts()).toMatchObject({ waitingChildren: 0, dead: 0 });
    }
    const left = await keysMatching(fx.client, `${fx.prefix}:{c-top}:f[dfrx]:*`);
    expect(left).toEqual([]);
  });

  it('drain of a child queue: its parents learn it (cancelled: onFailure applies)', async () => {
    const flows = fx.producer();
    const failing = await flows.add({
      queue: 'd-parents',
      data: 'a',
      children: [{ queue: 'd-kids', data: 1 }],
    });
    const ignoring = await flows.add({
      queue: 'd-parents',
      data: 'b',
      children: [{ queue: 'd-kids', data: 2, onFailure: 'ignore' }],
    });
    expect(await fx.queue('d-kids').drain()).toBe(2);
    const parents = fx.queue('d-parents');
    expect(await parents.getJob(failing.job.id)).toMatchObject({
      state: 'dead',
      deadReason: expect.stringMatching(/^child d-kids\/\d+ failed: cancelled \(queue drained\)$/),
    });
    expect(await parents.getJob(ignoring.job.id)).toMatchObject({
      state: 'pending',
      children: { pending: 0, completed: 0, failed: 1, cancelled: 0 },
    });
  });

  it('obliterate of a child queue fails its parents; of a parent queue, cancels its children', async () => {
    const flows = fx.producer();
    const a = await flows.add({
      queue: 'o-parents',
      data: 1,
      children: [{ queue: 'o-kids', data: 1 }],
    });
    await fx.queue('o-kids').obliterate();
    expect(await fx.queue('o-parents').getJob(a.job.id)).toMatchObject({
      state: 'dead',
      deadReason: expect.stringContaining('cancelled (queue obliterated)'),
    });
    const b = await flows.add({
      queue: 'o-parents2',
      data: 1,
      children: [{ queue: 'o-kids2', data: 1, id: 'kid' }],
    });
    expect(b.children).toHaveLength(1);
    await fx.queue('o-parents2').obliterate();
    expect(await fx.queue('o-kids2').getJob('kid')).toBeNull();
    expect(await keysButCounters(fx.client, fx.queue('o-parents2'))).toEqual([]);
  });

  it('obliterate is refused with live workers before any flow job is touched', async () => {
    const flows = fx.producer();
    const t = await flows.add({
      queue: 'l-parents',
      data: 1,
      children: [{ queue: 'l-kids', data: 1 }],
    });
    fx.worker('l-kids', () => new Promise(() => undefined));
    await waitFor(async () => (await fx.queue('l-kids').counts()).workers > 0, { what: 'worker' });
    await expect(fx.queue('l-kids').obliterate()).rejects.toMatchObject({ code: 'BAD_STATE' });
    expect((await fx.queue('l-parents').getJob(t.job.id))?.state).toBe('waiting-children');
  });

  it('obliterate racing a worker that starts: refused with nothing touched, or done whole', async () => {
    const flows = fx.producer();
    await flows.add({
      queue: 'r-parents',
      data: 0,
      id: 'parent',
      children: [
        { queue: 'r-kids', data: 1, id: 'kid' },
        { queue: 'r-kids', data: 2, id: 'later', delayMs: 60_000 },
      ],
    });
    // Registers while obliterate runs (not awaited): before its check, or after it.
    fx.worker('r-parents', () => 1);
    const refusal = await fx
      .queue('r-parents')
      .obliterate()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const kids = fx.queue('r-kids');
    if (refusal) {
      expect(refusal).toMatchObject({ code: 'BAD_STATE' });
      expect((await fx.queue('r-parents').getJob('parent'))?.state).toBe('waiting-children');
      expect((await kids.getJob('kid'))?.state).toBe('pending');
      expect((await kids.getJob('later'))?.state).toBe('delayed');
    } else {
      expect(await fx.queue('r-parents').getJob('parent')).toBeNull();
      expect(await kids.getJob('kid')).toBeNull();
      expect(await kids.getJob('later')).toBeNull();
    }
  });

  it('a batch: its callback runs once every job ended, failed ones included; getBatch counts', async () => {
    const flows = fx.producer();
    const batch = await flows.addBatch(
      [
        { queue: 'b-jobs', data: 1 },
        { queue: 'b-jobs', data: 2 },
        // (An option written out as undefined is none: 'ignore' still; it was 'fail-parent'.)
        { queue: 'b-jobs', data: -1, onFailure: undefined },
      ],
      { onComplete: { queue: 'b-done', data: 'report', id: 'batch-1' } },
    );
    expect(batch.id).toBe('b-done/batch-1');
    expect(batch.jobs).toHaveLength(3);
    expect(await flows.getBatch(batch.id)).toMatchObject({
      state: 'waiting-children',
      pending: 3,
      completed: 0,
      failed: 0,
    });
    fx.worker('b-jobs', (job) => {
      if ((job.data as number) < 0) throw new Error('negative');
      return job.data;
    });
    const info = await waitFor(
      async () => {
        const b = await flows.getBatch(batch.id);
        return b?.state === 'pending' ? b : undefined;
      },
      { what: 'the batch to end' },
    );
    expect(info).toEqual({
      id: 'b-done/batch-1',
      state: 'pending',
      pending: 0,
      completed: 2,
      failed: 1,
      cancelled: 0,
    });
    let failures: unknown;
    fx.worker('b-done', async (job) => void (failures = await job.getChildrenFailures()));
    await waitFor(() => failures, { what: 'the callback' });
    expect(Object.values(failures as object)).toEqual(['negative']);
    // Completed: its caller id is kept for the dedupe window; its children's records went with it.
    await waitFor(async () => (await flows.getBatch(batch.id))?.state === 'completed', {
      what: 'the callback to complete',
    });
    expect(await flows.getBatch('b-done/nothing')).toBeNull();
    await expect(flows.getBatch('no-slash')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('cancelling a parent cancels a child its worker prefetched and has not started', async () => {
    const finish = await busyWorker('pf-kids', () =>
      fx.producer().add({
        queue: 'pf-top',
        data: 0,
        id: 'par',
        children: [{ queue: 'pf-kids', data: 1, id: 'kid' }],
      }),
    );
    await leased('pf-kids', 'kid');
    expect(await fx.queue('pf-top').cancel('par')).toBe(true);
    await gone('pf-kids', 'kid', 'the prefetched child cancelled');
    expect(await finish()).toEqual(['blocker']);
  });

  it('a child that fails its parent: a sibling prefetched and not started is cancelled', async () => {
    const finish = await busyWorker('pf-sibs', () =>
      fx.producer().add({
        queue: 'pf-parents',
        data: 0,
        id: 'par',
        children: [
          { queue: 'pf-sibs', data: 1, id: 'sib' },
          { queue: 'pf-bad', data: 2, id: 'bad' },
        ],
      }),
    );
    await leased('pf-sibs', 'sib');
    fx.worker('pf-bad', () => Promise.reject(new Error('no')));
    await gone('pf-sibs', 'sib', 'the prefetched sibling cancelled');
    expect(await fx.queue('pf-parents').getJob('par')).toMatchObject({
      state: 'dead',
      children: { failed: 1, cancelled: 1 },
    });
    expect(await finish()).toEqual(['blocker']);
  });
});
