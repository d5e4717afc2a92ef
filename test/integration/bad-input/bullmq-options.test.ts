/**
 * BullMQ's option names where ours differ: refused with every problem listed, each with a hint
 * naming ours — the core WorkQueue and Worker (which accepted them silently before), schedules
 * (upsertSchedule's `pattern`), and the Nest module's @Processor() options and registrations.
 * Nothing reaches Redis.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  Worker,
  WorkQueue,
  WorkQueueError,
  type WorkerOptions,
  type WorkQueueOptions,
} from '../../../lib/index.js';
import { FlowProducer, QueueEvents } from '../../../lib/index.js';
import {
  moduleOptionProblems,
  processorOptionProblems,
  registerQueueProblems,
} from '../../../src/utils/validate-options.util.js';
import { countCommands, errorOf, offlineClient, problemsOf } from '../../support/core.js';
import { fixture } from '../sandbox/support.js';

let offline: Redis;
let sent: ReturnType<typeof countCommands>;
beforeAll(async () => {
  offline = await offlineClient();
  sent = countCommands(offline);
});
afterAll(() => {
  expect(sent.count).toBe(0);
  offline.disconnect();
});

const problems = (call: () => unknown) => problemsOf(call, true);

it('WorkQueue: unknown options are refused, BullMQ names with ours', async () => {
  const got = await problems(
    () =>
      new WorkQueue(offline, 'q', {
        connection: { host: 'x' },
        removeOnComplete: 100,
        lockDuration: 5_000,
        colour: 'red',
        leaseMs: 0,
      } as unknown as WorkQueueOptions),
  );
  expect(got).toEqual([
    expect.stringMatching(/^unknown option "connection" \(a WorkQueue takes its ioredis client/),
    expect.stringMatching(/^unknown option "removeOnComplete" \(.*keepCompleted here\); known: /),
    expect.stringMatching(/^unknown option "lockDuration" \(.*leaseMs here\)/),
    expect.stringMatching(/^unknown option "colour"; known: prefix, codec, /),
    'leaseMs must be a positive integer, got 0',
  ]);
  // Options that are undefined are no options.
  expect(
    new WorkQueue(offline, 'q', { logger: false, ...{ lockDuration: undefined } }),
  ).toBeTruthy();
  expect(await problems(() => new WorkQueue(offline, 'q', null as never))).toEqual([
    'options must be an object, got null',
  ]);
});

it('Worker: unknown options are refused, BullMQ names with ours', async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const got = await problems(
    () =>
      new Worker(q, () => undefined, {
        autorun: false,
        limiter: { max: 10, duration: 1_000 },
        lockDuration: 1_000,
        useWorkerThreads: true,
        concurrency: 0,
      } as unknown as WorkerOptions),
  );
  expect(got).toEqual([
    expect.stringMatching(/^unknown option "autorun" \(.*autostart here\); known: concurrency, /),
    expect.stringMatching(/^unknown option "limiter" \(a rate limit is the queue option limiter/),
    expect.stringMatching(/^unknown option "lockDuration" \(.*leaseMs here\)/),
    expect.stringMatching(/^unknown option "useWorkerThreads" \(.*mode: 'thread'/),
    expect.stringMatching(/^concurrency /),
  ]);
  // In the sandbox options too (they had no hint).
  const sandboxed = await problems(
    () =>
      new Worker(
        q,
        { file: fixture('handler.ts'), mode: 'thread', useWorkerThreads: true } as never,
        {
          autostart: false,
        },
      ),
  );
  expect(sandboxed).toEqual([
    "sandbox.useWorkerThreads is not a known option (BullMQ's useWorkerThreads is mode: 'thread' here)",
  ]);
});

it('Worker: autostart must be a boolean (a string was taken as true)', async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  expect(
    await problems(() => new Worker(q, () => undefined, { autostart: 'no' as unknown as boolean })),
  ).toEqual(['autostart must be a boolean, got "no"']);
});

it("upsertSchedule: BullMQ's pattern, repeat and attempts get hints", async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const got = await problems(() =>
    q.upsertSchedule('s', { pattern: '* * * * *' } as never, { data: 1, attempts: 3 } as never),
  );
  expect(got).toEqual(
    expect.arrayContaining([
      `spec: unknown key "pattern" (BullMQ's pattern is spec.cron here)`,
      `template: unknown key "attempts" (BullMQ's attempts is template.maxAttempts here)`,
    ]),
  );
});

it('Nest: @Processor() and registerQueue() options BullMQ users bring get hints', () => {
  expect(
    processorOptionProblems(
      { limiter: { max: 1 }, lockDuration: 1, concurrency: 2 },
      '@Processor("q"): ',
    ),
  ).toEqual([
    expect.stringMatching(
      /^@Processor\("q"\): limiter is not a known option \(a rate limit is the queue's: registerQueue/,
    ),
    `@Processor("q"): lockDuration is not a known option (BullMQ's lockDuration is leaseMs here)`,
  ]);
  expect(
    registerQueueProblems({ name: 'q', defaultJobOptions: { attempts: 3 }, removeOnFail: 5 }),
  ).toEqual([
    'defaultJobOptions is not a known option (maxAttempts and backoff are queue options here, the rest per add)',
    "removeOnFail is not a known option (BullMQ's removeOnFail is the queue option maxDead here)",
  ]);
});

it("BullMQ's attempts, a flat connection and a flow node's jobId/attempts/delay get hints", async () => {
  expect(
    await problems(() => new WorkQueue(offline, 'q', { attempts: 3 } as WorkQueueOptions)),
  ).toEqual([expect.stringMatching(/^unknown option "attempts" \(.*maxAttempts here/)]);
  expect(
    moduleOptionProblems({ connection: { host: 'h', port: 6379 }, defaults: { attempts: 3 } }),
  ).toEqual(
    expect.arrayContaining([
      'connection.host is not a known option (ioredis options go in connection: { redis: { host, … } }, or give connection: { url })',
      'connection.port is not a known option (ioredis options go in connection: { redis: { port, … } }, or give connection: { url })',
      "defaults.attempts is not a known option (BullMQ's attempts is the queue option maxAttempts here)",
    ]),
  );
  // BullMQ's forRoot(configKey, options): the first argument is our options.
  expect(moduleOptionProblems('reporting')).toEqual([
    `options must be an object with at least { connection }, got "reporting" (BullMQ's forRoot(configKey, options) is forRoot({ connection, connections: { "reporting": … } }) here, and registerQueue({ name, configKey }))`,
  ]);
  const flows = new FlowProducer(offline);
  expect(
    await problems(() =>
      flows.add({ queue: 'q', data: 1, jobId: 'j', attempts: 2, delay: 5 } as never),
    ),
  ).toEqual([
    expect.stringMatching(/^jobId: unknown field \(BullMQ's jobId is `id` here\)/),
    expect.stringMatching(/^attempts: unknown field \(BullMQ's attempts is `maxAttempts` here\)/),
    expect.stringMatching(/^delay: unknown field \(BullMQ's delay is `delayMs` here\)/),
  ]);
});

it('an add with a payload problem and option problems: the payload names the code, the message lists all', async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const e = await errorOf(() => q.add(undefined, { jobId: 'x' } as never));
  expect(e).toMatchObject({ code: 'ENCODE_FAILED' });
  expect((e as WorkQueueError).problems).toEqual([
    expect.stringMatching(/^unknown option "jobId" \(BullMQ's jobId is `id` here\)/),
    'data is undefined (use null for "no data")',
  ]);
  expect((e as Error).message).toMatch(/jobId.*; data is undefined/);
  // Alone, the payload's problem is the message.
  const alone = await errorOf(() => q.add(undefined));
  expect((alone as Error).message).toBe('data is undefined (use null for "no data")');
});

it("BullMQ's add(name, data, opts) argument order is refused with a hint, nothing sent", async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const add = q.add.bind(q) as (...a: unknown[]) => Promise<unknown>;
  expect(await problems(() => add('render', { page: 1 }, { attempts: 2 }))).toEqual([
    "add takes (data, opts?): BullMQ's add(name, data, opts) is add(data, { name, ...opts }) here",
  ]);
});

it("BullMQ's two-argument add(name, data) whose data has keys of no option of ours names the argument order, nothing sent", async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const known = expect.stringMatching(/; known: id, name, /);
  // Its data's keys are no options of ours (it said only: unknown option "reportId").
  expect(await problems(() => q.add('render', { reportId: 1, page: 2 } as never))).toEqual([
    expect.stringMatching(/^unknown option "reportId"; known: id, name, /),
    expect.stringMatching(/^unknown option "page"; known: id, name, /),
    // (The string is not shown: it is the job's data here, and no message shows data.)
    `add(<a string>, { reportId, page }) reads as BullMQ's add(name, data): add takes (data, opts?) here — a named job is add({ reportId, page }, { name })`,
  ]);
  expect(await problems(() => q.add('render', { name: 'r', reportId: 1 } as never))).toEqual([
    known,
    expect.stringMatching(/^add\(<a string>, \{ name, reportId \}\) reads as BullMQ's add/),
  ]);
  // Our order with BullMQ's option names: their own hints, no word of the argument order.
  expect(await problems(() => q.add('report', { jobId: 'j', delay: 5 } as never))).toEqual([
    expect.stringMatching(/^unknown option "jobId" \(BullMQ's jobId is `id` here\)/),
    expect.stringMatching(/^unknown option "delay" \(/),
  ]);
  // Not a string: no argument order to suspect. Nor in addBulk's entries, one entry too.
  expect(await problems(() => q.add({ a: 1 }, { reportId: 1 } as never))).toEqual([known]);
  const one = [{ data: 'render', opts: { reportId: 1 } }] as never;
  expect(await problems(() => q.addBulk(one))).toEqual([known]);
});

it("BullMQ's positional arguments, unknown keys of a method's options and a { connection } in place of the client are refused, never ignored", async () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  const any = q as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const page = (known: string, got: string) => `options must be an object { ${known} }, got ${got}`;
  expect(await problems(() => any.getJobs!.call(q, 'pending', 2, 3))).toEqual([
    page('offset, limit, group', '2'),
  ]);
  expect(await problems(() => any.getJobLogs!.call(q, 'x', 3, 4))).toEqual([
    page('offset, limit', '3'),
  ]);
  for (const m of ['listDead', 'getGroups', 'listSchedules'])
    expect(await problems(() => any[m]!.call(q, 0, 10))).toEqual([page('offset, limit', '0')]);
  expect(await problems(() => q.listDead({ offset: -1, limit: 0 }))).toEqual([
    'offset must be an integer >= 0, got -1',
    'limit must be an integer 1..10000, got 0',
  ]);
  expect(await problems(() => q.getJobs('waiting' as never))).toEqual([
    `state must be one of pending, delayed, leased, dead, waiting-children, completed, got "waiting" (BullMQ's waiting is pending here)`,
  ]);
  expect(await problems(() => q.getJobs(['failed'] as never))).toEqual([
    `state must be one of pending, delayed, leased, dead, waiting-children, completed, got ["failed"] (one state per call: BullMQ's getJobs(types[]) is a call per state here)`,
  ]);
  expect(await problems(() => q.getJobs('constructor' as never))).toEqual([
    'state must be one of pending, delayed, leased, dead, waiting-children, completed, got "constructor"',
  ]);
  expect(await problems(() => q.getMetrics('completed', { since: 5 } as never))).toEqual([
    'unknown option "since"; known: sinceMs, untilMs',
  ]);
  expect(await problems(() => q.waitForResult('x', { timeout: 5 } as never))).toEqual([
    'unknown option "timeout"; known: timeoutMs, signal',
  ]);
  expect(await problems(() => any.clean!.call(q, 0, 100, 'completed'))).toEqual([
    expect.stringMatching(
      /^clean\(\) takes no arguments: .*purgeCompleted\(\) or purgeDead\(\) here/,
    ),
  ]);
  expect(await problems(() => q.add('x', [] as never))).toEqual([
    'options must be an object, got []',
  ]);
  expect(await problems(() => new QueueEvents(offline, 'q', { from: 5, foo: 1 } as never))).toEqual(
    [
      'unknown option "foo"; known: prefix, from, blockMs, commandTimeoutMs',
      "from must be '$', '0' or a stream id, got 5",
    ],
  );
  const bullmq = { connection: { host: 'localhost', port: 6379 } } as never;
  const clientProblem = expect.stringMatching(
    /^client must be an ioredis Redis or Cluster, got .*BullMQ's \{ connection \} is given as an ioredis client here/,
  );
  expect(await problems(() => new WorkQueue(bullmq, 'q', { leaseMs: 0 }))).toEqual([
    clientProblem,
    'leaseMs must be a positive integer, got 0',
  ]);
  expect(await problems(() => new FlowProducer(bullmq))).toEqual([clientProblem]);
  expect(await problems(() => new QueueEvents(bullmq, 'q'))).toEqual([clientProblem]);
  // BullMQ's Worker(name, processor, { connection }): typed, with the others' problems (a bare
  // TypeError reading the queue's options before).
  expect(await problems(() => new Worker('q' as never, () => 1, { concurrency: 0 }))).toEqual([
    expect.stringMatching(/^queue must be a WorkQueue, got "q": BullMQ's new Worker\(name, /),
    'concurrency must be a positive integer, got 0',
  ]);
  expect(await problems(() => new Worker(undefined as never, () => 1))).toEqual([
    'queue must be a WorkQueue, got undefined',
  ]);
  // A sparse array's holes are entries too (they were skipped, the results shifted).
  // eslint-disable-next-line no-sparse-arrays
  expect(await problems(() => q.addBulk([, { data: 1 }] as never))).toEqual([
    'job 0: must be an object { data, opts? }',
  ]);
});
