// Event hooks in Nest, bootstrap and shutdown: bad declarations fail app.init() with every
// problem listed; after app.close() no reader, socket or timer is left.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Param } from '@nestjs/common';
import request from 'supertest';
import {
  InjectQueue,
  OnQueueEvent,
  OnWorkerEvent,
  Process,
  Processor,
  QueueEventsListener,
  type WorkQueue,
} from '../../src/index.js';
import { WorkQueueQueueEvents } from '../../src/work-queue.queue-events.js';
import { uniqueName } from '../support/keys.js';
import {
  activeResources,
  createNestApp,
  Inspector,
  MemoryLogger,
  nestAppsClosedAfterEach,
} from '../support/nest-app.js';
import { appModule, MailEvents, MailProcessor, type MailJob } from '../support/nest-events.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
const startApp = nestAppsClosedAfterEach();
afterAll(() => inspector.close());

describe('bad declarations', () => {
  it('fail the bootstrap with every problem listed', async () => {
    @Injectable()
    class NotAProcessor {
      @OnWorkerEvent('completed')
      done() {}
      @OnQueueEvent('completed')
      heard() {}
    }
    @Processor('mail')
    class BadEvents {
      @Process()
      handle() {}
      @OnWorkerEvent('finished' as 'completed')
      finished() {}
    }
    @QueueEventsListener('nope')
    class UnknownQueue {
      @OnQueueEvent('done' as 'completed')
      done() {}
    }
    @QueueEventsListener('mail')
    class NoMethods {}
    const prefix = inspector.track(uniqueName('t'));
    const err = await startApp({
      imports: [
        appModule(
          prefix,
          [NotAProcessor, BadEvents, UnknownQueue, NoMethods],
          new MemoryLogger(),
          [],
          {
            events: false,
          },
        ),
      ],
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect((err as { problems: string[] }).problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining(
          '@OnWorkerEvent() on NotAProcessor.done(): NotAProcessor is not a @Processor()',
        ),
        expect.stringContaining(
          '@OnQueueEvent() on NotAProcessor.heard(): NotAProcessor is not a @QueueEventsListener()',
        ),
        expect.stringContaining(
          `@OnWorkerEvent('finished') on BadEvents.finished(): not a worker event`,
        ),
        expect.stringContaining(
          `@QueueEventsListener('nope') on UnknownQueue: queue "nope" is not registered`,
        ),
        expect.stringContaining(`@OnQueueEvent('done') on UnknownQueue.done(): not an event kind`),
        expect.stringContaining(
          `@QueueEventsListener('mail') on NoMethods: queue "mail" keeps no event log`,
        ),
        expect.stringContaining(
          `@QueueEventsListener('mail') on NoMethods: no @OnQueueEvent() method`,
        ),
      ]),
    );
  });
});

describe('shutdown', () => {
  it('leaves no socket or timer behind after app.close()', async () => {
    @Controller('wait')
    class WaitController {
      constructor(@InjectQueue('mail') private readonly mail: WorkQueue<MailJob>) {}
      @Get(':to')
      async send(@Param('to') to: string) {
        const { id } = await this.mail.add({ to });
        return { result: await this.mail.waitForResult(id, { timeoutMs: 5_000 }) };
      }
    }
    await inspector.client.ping();
    const baseline = activeResources();
    const prefix = inspector.track(uniqueName('t'));
    const app = await createNestApp({
      imports: [
        appModule(prefix, [MailProcessor, MailEvents], new MemoryLogger(), [WaitController], {
          storeResults: { ttlMs: 60_000 },
        }),
      ],
    });
    await app.init();
    await request(app.getHttpServer())
      .get('/wait/w')
      .expect(200, { result: { sentTo: 'w' } });
    await waitFor(() => app.get(MailEvents).heard.some((e) => e.kind === 'completed'));
    expect(app.get(MailProcessor).events.length).toBeGreaterThan(0);
    const readers = app.get(WorkQueueQueueEvents);
    await app.close();
    expect(readers.openReaders).toBe(0);
    const above = () =>
      Object.fromEntries(
        Object.entries(activeResources()).filter(([type, n]) => n > (baseline[type] ?? 0)),
      );
    await waitFor(() => Object.keys(above()).length === 0, {
      timeoutMs: 3_000,
      what: 'resources back to the baseline',
    }).catch(() => undefined);
    expect(above()).toEqual({});
  });
});
