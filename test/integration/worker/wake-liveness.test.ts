/**
 * A job that an idle worker can start starts at once — it does not wait for a busy worker's
 * running job, nor for an idle worker's idle timeout (60 s here). Two workers on one queue, w1
 * blocked in its idle wait before w2 (Redis serves blocked clients in that order, so w1 pops
 * first): a wake-up or hand-off that w1 takes but cannot act on (paused, full, closing) reaches
 * w2; a busy worker with prefetch room only does not park, so adds go to the idle one; an add
 * whose first job is handed off wakes another worker for the rest.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueue, type Worker, type WorkerOptions } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred, idleWaitBlocked, workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();
const admin = fx.client();

interface Internals {
  ctx: {
    id: string;
    idle: {
      conn?: { stream: import('node:net').Socket };
      waiting: boolean;
      wait(nextDue: number, now: number): Promise<void>;
    };
  };
}
const internals = (w: Worker<string, unknown>) => (w as unknown as Internals).ctx;

/** Far under the idle timeout, far above a few round trips. */
const PROMPT = { timeoutMs: 3_000 };

/**
 * Two idle workers, w1 blocked first; jobs whose data starts with 'L' run until `release`.
 * `started`: data → worker. A delayed job (`delayed`, for a promote: a plain wake-up) is added
 * before the workers block (its add's wake-up would reorder them).
 */
async function twoIdleWorkers(opts: WorkerOptions = { prefetch: 0 }) {
  const prefix = uniqueName('t');
  const q = fx.queue<string>({ prefix });
  const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
  const { id: delayed } = await producer.add('woken', { delayMs: 3_600_000 });
  const gate = deferred();
  const started = new Map<string, string>();
  const make = async (name: string) => {
    const w = worker(
      q,
      async (job) => {
        started.set(job.data, name);
        if (job.data.startsWith('L')) await gate.promise;
      },
      { concurrency: 1, idleTimeoutMs: 60_000, ...opts },
    );
    await w.start();
    await waitFor(() => idleWaitBlocked(admin, w), { what: `${name} blocked in its idle wait` });
    return w;
  };
  const w1 = await make('w1');
  return { q, producer, started, w1, make, delayed, release: () => gate.resolve() };
}

const parked = async (q: WorkQueue<string>, w: Worker<string, unknown>) =>
  (await admin.zscore(q.keys.key('parked'), internals(w).id)) !== null;

describe('a wake-up or hand-off taken by a worker that cannot start the job reaches another', () => {
  it('Worker.pause(): the wake-up its still-blocked idle wait takes', async () => {
    const { q, producer, started, w1, make, delayed, release } = await twoIdleWorkers();
    await make('w2');
    try {
      w1.pause();
      await waitFor(async () => !(await parked(q, w1)), { what: 'w1 unparked' });
      expect(await producer.promote(delayed)).toBe(true); // a plain wake-up: w1's wait takes it
      await waitFor(() => !internals(w1).idle.waiting, { what: "w1's wait to read it" });
      await waitFor(() => started.get('woken'), { ...PROMPT, what: 'the job to run on w2' });
      expect(started.get('woken')).toBe('w2');
    } finally {
      release();
    }
  });

  it('close(): a wake-up its idle wait took just before the close', async () => {
    const { q, producer, started, w1, make, delayed, release } = await twoIdleWorkers();
    await make('w2');
    const blocking = internals(w1).idle.conn!.stream;
    blocking.pause(); // w1 does not read its BLMOVE's answer
    try {
      expect(await producer.promote(delayed)).toBe(true);
      const hx = q.keys.workerHandoffs(internals(w1).id);
      await waitFor(async () => (await admin.llen(hx)) === 1, {
        what: "w1's wait to take the wake-up (in Redis)",
      });
      await w1.close({ timeoutMs: 0 });
    } finally {
      blocking.resume();
      release();
    }
    await waitFor(() => started.get('woken'), { ...PROMPT, what: 'the job to run on w2' });
  });

  it.each([
    ['no prefetch', { prefetch: 0 }],
    ['default prefetch', {}],
  ] as const)(
    'an add whose first job is handed off to a worker it fills (%s): the rest go to another',
    async (_, opts) => {
      const { producer, started, make, release } = await twoIdleWorkers(opts);
      await make('w2');
      try {
        await producer.addBulk([{ data: 'L' }, { data: 'Z' }]);
        await waitFor(() => started.get('L'), { what: 'L to start' });
        await waitFor(() => started.get('Z'), { ...PROMPT, what: 'Z to start' });
        expect(started.get('Z')).not.toBe(started.get('L'));
      } finally {
        release();
      }
    },
  );
});

it('a wake-up passed on by a paused worker whose slot frees in the same turn: it leases itself', async () => {
  const { q, producer, started, w1, delayed, release } = await twoIdleWorkers();
  const loop = (w1 as unknown as { ctx: { loop: { passOn: boolean } } }).ctx.loop;
  let v = false;
  Object.defineProperty(loop, 'passOn', {
    get: () => v,
    set: (x: boolean) => {
      v = x;
      if (x) w1.resume(); // the slot frees (here a resume; as well a run ending) in that turn
    },
  });
  try {
    w1.pause();
    await waitFor(async () => !(await parked(q, w1)), { what: 'w1 unparked' });
    expect(await producer.promote(delayed)).toBe(true);
    await waitFor(() => started.get('woken'), { ...PROMPT, what: 'the job to run on w1' });
  } finally {
    release();
  }
});

it('a worker that drained a backlog with two lease calls in flight parks again (adds hand off to it)', async () => {
  const prefix = uniqueName('t');
  const q = fx.queue<string>({ prefix });
  const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
  await producer.addBulk(Array.from({ length: 40 }, (_, i) => ({ data: `j${i}` })));
  let done = 0;
  const w = worker(q, () => void done++, { concurrency: 1, prefetch: 4, idleTimeoutMs: 60_000 });
  await w.start();
  await waitFor(() => done === 40, { what: 'the backlog done' });
  await waitFor(() => idleWaitBlocked(admin, w), { what: 'the worker waiting' });
  expect(await parked(q, w)).toBe(true);
});

describe('a busy worker with prefetch room only does not park (default prefetch)', () => {
  for (const how of ['handed off', 'delayed 100 ms'] as const) {
    it(`a job ${how} goes to the idle worker, not behind the running one`, async () => {
      const { q, producer, started, w1, make, release } = await twoIdleWorkers({});
      try {
        await producer.add('L'); // handed off to w1, which runs it
        await waitFor(() => started.get('L'), { what: 'L to start' });
        // Its adopting call leased into its prefetch room (nothing there): not parked again.
        await waitFor(async () => !(await parked(q, w1)) && !internals(w1).idle.waiting, {
          what: 'w1 running L, not parked nor waiting',
        });
        await make('w2');
        await producer.add('J', how === 'handed off' ? {} : { delayMs: 100 });
        await waitFor(() => started.get('J'), { ...PROMPT, what: 'J to start' });
        expect(started.get('J')).toBe('w2');
      } finally {
        release();
      }
    });
  }
});

describe('a wait that outlived its free slot (a lease filled it meanwhile)', () => {
  for (const how of ['a hand-off', 'a plain wake-up'] as const) {
    it(`${how} it pops goes to the idle worker, not behind the running job`, async () => {
      const { producer, started, w1, make, delayed, release } = await twoIdleWorkers();
      try {
        await producer.add('L'); // handed off to w1, which runs it (its only slot)
        await waitFor(() => started.get('L') && !internals(w1).idle.waiting, {
          what: 'w1 running L, not waiting',
        });
        // As when a lease call (a timer's look at a due job) fills the slot during a wait.
        void internals(w1).idle.wait(0, Date.now());
        await waitFor(() => idleWaitBlocked(admin, w1), { what: 'w1 blocked again' });
        await make('w2'); // blocked after w1: w1 pops first
        if (how === 'a hand-off') await producer.add('J');
        else expect(await producer.promote(delayed)).toBe(true);
        const job = how === 'a hand-off' ? 'J' : 'woken';
        await waitFor(() => started.get(job), { ...PROMPT, what: `${job} to start` });
        expect(started.get(job)).toBe('w2');
      } finally {
        release();
      }
    });
  }
});

it('a worker running a suspect alone: a hand-off its wait pops goes to another worker', async () => {
  const prefix = uniqueName('t');
  const q = fx.queue<string>({ prefix });
  const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
  // A suspect: its lease lapsed and clean() took it back (it runs alone next).
  await producer.add('LS');
  expect((await producer.lease({ leaseMs: 1 })).length).toBe(1);
  await waitFor(async () => (await producer.clean()).reclaimed === 1, { what: 'LS reclaimed' });
  const gate = deferred();
  const started = new Map<string, string>();
  const make = async (name: string, concurrency: number) => {
    const w = worker(
      q,
      async (job) => {
        started.set(job.data, name);
        if (job.data.startsWith('L')) await gate.promise;
      },
      { concurrency, prefetch: 0, idleTimeoutMs: 60_000 },
    );
    await w.start();
    return w;
  };
  try {
    const w1 = await make('w1', 2); // leases LS alone: its other slot free, does it wait?
    await waitFor(() => started.get('LS'), { what: 'LS to start' });
    await waitFor(async () => !internals(w1).idle.waiting || (await idleWaitBlocked(admin, w1)), {
      what: 'w1 blocked, if it waits',
    });
    const w2 = await make('w2', 1);
    await waitFor(() => idleWaitBlocked(admin, w2), { what: 'w2 blocked in its idle wait' });
    await producer.add('J'); // handed off: w1's wait pops it first
    await waitFor(() => started.get('J'), { ...PROMPT, what: 'J to start' });
    expect(started.get('J')).toBe('w2');
  } finally {
    gate.resolve();
  }
});
