// Event hooks in Nest: @OnWorkerEvent on processors (this app's worker), @QueueEventsListener /
// @OnQueueEvent hearing every process through one shared reader, waitForResult over HTTP.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Param } from '@nestjs/common';
import request from 'supertest';
import {
  InjectQueue,
  OnQueueEvent,
  OnWorkerEvent,
  Process,
  Processor,
  QueueEventsListener,
  type QueueEventOf,
  type WorkQueue,
} from '../../src/index.js';
import { WorkQueueQueueEvents } from '../../src/work-queue.queue-events.js';
import { uniqueName } from '../support/keys.js';
import { Inspector, MemoryLogger, nestAppsClosedAfterEach } from '../support/nest-app.js';
import { appModule, MailEvents, MailProcessor, type MailJob } from '../support/nest-events.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
const startApp = nestAppsClosedAfterEach();
afterAll(() => inspector.close());

describe('@OnWorkerEvent on a @Processor', () => {
  it("hears its own worker's events: active, progress, completed, failed, dead", async () => {
    const prefix = inspector.track(uniqueName('t'));
    const app = await startApp({
      imports: [appModule(prefix, [MailProcessor], new MemoryLogger())],
    });
    const processor = app.get(MailProcessor);
    const queue = inspector.queue<MailJob>('mail', prefix);
    const ok = await queue.add({ to: 'a' });
    const bad = await queue.add({ to: 'b', fail: true });
    await waitFor(() => processor.events.some((e) => e.startsWith(`dead ${bad.id}`)), {
      what: 'the failing job dead',
    });
    await waitFor(() => processor.results.has(ok.id), { what: 'the completed event' });
    expect(processor.results.get(ok.id)).toEqual({ sentTo: 'a' });
    expect(processor.events).toEqual(
      expect.arrayContaining([
        `active ${ok.id}`,
        `completed ${ok.id}`,
        `active ${bad.id}`,
        `retried ${bad.id}: no mailbox b`,
        `dead ${bad.id}: no mailbox b`,
      ]),
    );
    // active comes before the job's outcome; each attempt of the failing job is active once.
    expect(processor.events.indexOf(`active ${ok.id}`)).toBeLessThan(
      processor.events.indexOf(`completed ${ok.id}`),
    );
    expect(processor.events.filter((e) => e === `active ${bad.id}`)).toHaveLength(2);
    expect(processor.progress).toContainEqual([ok.id, 0.5]);
    expect(processor.progress).toContainEqual([ok.id, 1]);
    // The job a handler gets when 'progress' has listeners keeps the core job's signal.
    expect(processor.signals).toEqual([true, true, true]);
    // Its 'completed' listener reads the job's data as added (decoded again after the run).
    expect(processor.completedData.get(ok.id)).toEqual({ to: 'a' });
  });

  it("a handler's assignment to job.data through the job that tells 'progress' holds", async () => {
    const prefix = inspector.track(uniqueName('t'));
    const app = await startApp({
      imports: [appModule(prefix, [MailProcessor], new MemoryLogger())],
    });
    const processor = app.get(MailProcessor);
    const queue = inspector.queue<MailJob>('mail', prefix);
    const { id } = await queue.add({ to: 'a', forward: 'b' });
    await waitFor(() => processor.results.has(id), { what: 'the completed event' });
    expect(processor.results.get(id)).toEqual({ sentTo: 'b' });
    // Set by the handler, not stored: kept as it was set, never decoded again.
    expect(processor.completedData.get(id)).toEqual({ to: 'b' });
  });

  it('logs a listener that throws or rejects (to a logger that throws too); jobs still complete', async () => {
    @Processor('mail')
    class Fragile {
      completedHeard = 0;
      @Process()
      handle() {
        return 'done';
      }
      @OnWorkerEvent('completed')
      throws() {
        this.completedHeard++;
        throw new Error('listener broke');
      }
      @OnWorkerEvent('active')
      async rejects() {
        throw new Error('async listener broke');
      }
    }
    const prefix = inspector.track(uniqueName('t'));
    // Its error() records, then throws: nothing escapes (it was an unhandled rejection).
    const logger = new (class extends MemoryLogger {
      override error(message: unknown): void {
        super.error(message);
        throw new Error('logger down');
      }
    })();
    const app = await startApp({ imports: [appModule(prefix, [Fragile], logger)] });
    const queue = inspector.queue('mail', prefix);
    await queue.addBulk([{ data: 1 }, { data: 2 }]);
    await waitFor(
      async () => (await queue.counts()).pending === 0 && app.get(Fragile).completedHeard === 2,
    );
    await waitFor(() => logger.messages('error').length >= 4, { what: 'four logged failures' });
    expect(logger.messages('error')).toEqual(
      expect.arrayContaining([
        expect.stringContaining(
          `queue "mail": @OnWorkerEvent('completed') Fragile.throws() failed: listener broke`,
        ),
        expect.stringContaining(
          `queue "mail": @OnWorkerEvent('active') Fragile.rejects() failed: async listener broke`,
        ),
      ]),
    );
    expect((await queue.counts()).dead).toBe(0);
  });
});

describe('@QueueEventsListener / @OnQueueEvent', () => {
  it("app A's listener hears a job completed by app B's processor", async () => {
    const prefix = inspector.track(uniqueName('t'));
    const a = await startApp({ imports: [appModule(prefix, [MailEvents], new MemoryLogger())] });
    const b = await startApp({ imports: [appModule(prefix, [MailProcessor], new MemoryLogger())] });
    const listener = a.get(MailEvents);
    // Added through app A's own queue, processed only by app B (A has no processor).
    const queueA = a.get<WorkQueue<MailJob>>('WorkQueue:mail');
    const { id } = await queueA.add({ to: 'x' });
    const done = await waitFor(
      () => listener.heard.find((e) => e.kind === 'completed' && e.id === id),
      { what: 'the completed event in app A' },
    );
    // Kept (keepCompleted): its result is in the event and readable with getJob.
    expect(done).toMatchObject({
      kind: 'completed',
      id,
      resultStored: true,
      result: { sentTo: 'x' },
    });
    // B's own worker event may come a moment later than A's read of the log: wait for it too.
    const processor = b.get(MailProcessor);
    await waitFor(() => processor.results.has(id), { what: "B's completed worker event" });
    expect(processor.results.get(id)).toEqual({ sentTo: 'x' });
    // Only the kinds it listens to, in the log's order.
    expect(listener.heard.map((e) => `${e.kind} ${e.id}`)).toEqual([
      `added ${id}`,
      `completed ${id}`,
    ]);
    // B's processor class is not a listener: it heard its own worker only.
    const { id: dead } = await queueA.add({ to: 'y', fail: true });
    await waitFor(() => listener.heard.find((e) => e.kind === 'dead' && e.id === dead), {
      what: 'the dead event in app A',
    });
  });

  it('uses one reader per queue, however many listener classes; logs failing methods', async () => {
    @QueueEventsListener('mail')
    class Second {
      readonly ids: string[] = [];
      @OnQueueEvent('added')
      added(e: QueueEventOf<'added'>) {
        this.ids.push(e.id);
        throw new Error('second broke');
      }
    }
    const prefix = inspector.track(uniqueName('t'));
    const logger = new MemoryLogger();
    const app = await startApp({ imports: [appModule(prefix, [MailEvents, Second], logger)] });
    const queue = app.get<WorkQueue<MailJob>>('WorkQueue:mail');
    const { id } = await queue.add({ to: 'z' });
    await waitFor(
      () => app.get(Second).ids.includes(id) && app.get(MailEvents).heard.some((e) => e.id === id),
    );
    expect(logger.messages('error')).toContainEqual(
      expect.stringContaining(`@OnQueueEvent('added') Second.added() failed: second broke`),
    );
    expect(logger.messages('log')).toContainEqual(
      'events of queue "mail" heard by MailEvents, Second',
    );
    expect(app.get(WorkQueueQueueEvents).openReaders).toBe(1);
  });
});

describe('waitForResult from a controller', () => {
  it('returns the processor result over HTTP', async () => {
    @Controller('mail')
    class MailController {
      constructor(
        @InjectQueue('mail') private readonly mail: WorkQueue<MailJob, { sentTo: string }>,
      ) {}
      @Get(':to')
      async send(@Param('to') to: string) {
        const { id } = await this.mail.add({ to });
        return { id, result: await this.mail.waitForResult(id, { timeoutMs: 5_000 }) };
      }
    }
    const prefix = inspector.track(uniqueName('t'));
    const app = await startApp({
      imports: [
        appModule(prefix, [MailProcessor], new MemoryLogger(), [MailController], {
          storeResults: { ttlMs: 60_000 },
        }),
      ],
    });
    const res = await request(app.getHttpServer()).get('/mail/someone').expect(200);
    expect(res.body).toEqual({ id: expect.any(String), result: { sentTo: 'someone' } });
  });
});
