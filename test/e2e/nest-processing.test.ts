import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type Type } from '@nestjs/common';
import {
  getQueueToken,
  InjectQueue,
  NonRetryableError,
  Process,
  Processor,
  WorkQueue,
  WorkQueueContext,
  WorkQueueModule,
  type Job,
} from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { Inspector, MemoryLogger, nestAppsClosedAfterEach } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

interface MailJob {
  to: string;
}

const inspector = new Inspector();
const startApp = nestAppsClosedAfterEach();
afterAll(() => inspector.close());

/** An app with forRoot on a fresh prefix, the given queues and providers. */
async function start(queues: string[], providers: Type[], logger = new MemoryLogger()) {
  const prefix = inspector.track(uniqueName('t'));
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: testRedisUrl() },
        prefix,
        logger,
        defaults: { backoff: { type: 'fixed', delayMs: 10 }, maxAttempts: 3 },
      }),
      WorkQueueModule.registerQueue(...queues.map((name) => ({ name }))),
    ],
    providers,
  })
  class AppModule {}
  const app = await startApp({ imports: [AppModule] });
  return { app, prefix, logger };
}

describe('processing through the Nest layer', () => {
  it('routes named jobs to their method and the rest to the catch-all', async () => {
    const seen: string[] = [];
    @Processor('mail', { concurrency: 2 })
    class MailProcessor {
      @Process('welcome')
      welcome(job: Job<MailJob>) {
        seen.push(`welcome:${job.data.to}`);
      }
      @Process()
      other(job: Job<MailJob>) {
        seen.push(`other(${job.name ?? '-'}):${job.data.to}`);
      }
    }
    @Injectable()
    class Mailer {
      constructor(@InjectQueue('mail') readonly queue: WorkQueue<MailJob>) {}
    }
    const { app } = await start(['mail'], [MailProcessor, Mailer]);
    const queue = app.get(Mailer).queue;
    expect(queue).toBe(app.get(getQueueToken('mail')));
    await queue.add({ to: 'a' }, { name: 'welcome' });
    await queue.add({ to: 'b' });
    await queue.add({ to: 'c' }, { name: 'reset-password' });
    await waitFor(() => seen.length === 3, { what: '3 jobs' });
    expect(seen.sort()).toEqual(['other(-):b', 'other(reset-password):c', 'welcome:a']);
    expect(app.get(WorkQueueContext).getWorker('mail')?.concurrency).toBe(2);
    // Completes are sent just after the handlers return.
    await waitFor(async () => (await queue.counts()).leased === 0);
    expect(await queue.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0, workers: 1 });
  });

  it('dead-letters at once a job that no method handles, with the reason', async () => {
    const seen: string[] = [];
    @Processor('reports')
    class ReportProcessor {
      @Process('daily')
      daily(job: Job) {
        seen.push(job.id);
      }
    }
    const { app, logger } = await start(['reports'], [ReportProcessor]);
    const queue = app.get<WorkQueue>(getQueueToken('reports'));
    const weekly = await queue.add({}, { name: 'weekly' });
    const unnamed = await queue.add({});
    const daily = await queue.add({}, { name: 'daily' });
    await waitFor(async () => (await queue.counts()).dead === 2 && seen.length === 1);
    expect(seen).toEqual([daily.id]);
    const dead = await queue.listDead();
    const reasons = Object.fromEntries(dead.map((d) => [d.id, d]));
    expect(reasons[weekly.id]).toMatchObject({
      reason: 'no @Process() handler for job name "weekly" in ReportProcessor',
      attemptsMade: 1,
    });
    expect(reasons[unnamed.id]?.reason).toBe(
      'no @Process() handler for unnamed jobs in ReportProcessor',
    );
    expect(logger.messages('warn')).toContainEqual(
      `queue "reports": job ${weekly.id} dead-lettered: no @Process() handler for job name "weekly" in ReportProcessor`,
    );
  });

  it('retries a throwing handler, then dead-letters it; NonRetryableError dead-letters at once', async () => {
    const attempts = new Map<string, number[]>();
    @Processor('flaky')
    class FlakyProcessor {
      @Process()
      handle(job: Job<{ kind: string }>) {
        attempts.set(job.id, [...(attempts.get(job.id) ?? []), job.attempt]);
        if (job.data.kind === 'recovers' && job.attempt < 3) throw new Error('not yet');
        if (job.data.kind === 'broken') throw new Error(`broken on attempt ${job.attempt}`);
        if (job.data.kind === 'fatal') throw new NonRetryableError('invalid input');
        return 'ok';
      }
    }
    const { app } = await start(['flaky'], [FlakyProcessor]);
    const queue = app.get<WorkQueue<{ kind: string }>>(getQueueToken('flaky'));
    const recovers = await queue.add({ kind: 'recovers' });
    const broken = await queue.add({ kind: 'broken' });
    const fatal = await queue.add({ kind: 'fatal' });
    await waitFor(async () => {
      const c = await queue.counts();
      return c.dead === 2 && c.pending + c.delayed + c.leased === 0;
    });
    expect(attempts.get(recovers.id)).toEqual([1, 2, 3]);
    expect(attempts.get(broken.id)).toEqual([1, 2, 3]);
    expect(attempts.get(fatal.id)).toEqual([1]);
    expect(await queue.getJob(recovers.id)).toMatchObject({ state: 'completed', attemptsMade: 3 });
    const dead = Object.fromEntries((await queue.listDead()).map((d) => [d.id, d]));
    expect(dead[broken.id]).toMatchObject({ reason: 'broken on attempt 3', attemptsMade: 3 });
    expect(dead[fatal.id]).toMatchObject({ reason: 'invalid input', attemptsMade: 1 });
  });

  it('gives the handler the job: id, data, name, priority, attempt, signal, progress(), extend()', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const got: Array<Record<string, unknown>> = [];
    @Processor('jobs')
    class JobProcessor {
      @Process('inspect')
      async inspect(job: Job<{ n: number }>) {
        got.push({
          id: job.id,
          data: job.data,
          name: job.name,
          priority: job.priority,
          attempt: job.attempt,
          aborted: job.signal.aborted,
          progress: await job.progress(0.5),
          extended: await job.extend(60_000),
        });
        await gate;
      }
    }
    const { app } = await start(['jobs'], [JobProcessor]);
    const queue = app.get<WorkQueue<{ n: number }>>(getQueueToken('jobs'));
    const { id } = await queue.add({ n: 1 }, { name: 'inspect', priority: 2, id: 'job-a' });
    await waitFor(() => got.length === 1);
    expect(got[0]).toEqual({
      id,
      data: { n: 1 },
      name: 'inspect',
      priority: 2,
      attempt: 1,
      aborted: false,
      progress: true,
      extended: true,
    });
    expect(await queue.getJob(id)).toMatchObject({ state: 'leased', progress: 0.5 });
    release();
    // Completed: its caller id shows it so for the dedupe window.
    await waitFor(async () => (await queue.getJob(id))?.state === 'completed', {
      what: 'completed',
    });
  });

  it('forRootAsync + registerQueueAsync with factories, processors in a feature module', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const seen: number[] = [];
    @Injectable()
    class Config {
      readonly values = { url: testRedisUrl(), prefix, attempts: 1 };
    }
    @Module({ providers: [Config], exports: [Config] })
    class ConfigModule {}
    @Processor('async-q')
    class AsyncProcessor {
      @Process()
      handle(job: Job<number>) {
        seen.push(job.data);
        if (job.data < 0) throw new Error('negative');
      }
    }
    @Module({
      imports: [
        WorkQueueModule.registerQueueAsync({
          name: 'async-q',
          imports: [ConfigModule],
          inject: [Config],
          useFactory: (config: Config) => ({ maxAttempts: config.values.attempts }),
        }),
      ],
      providers: [AsyncProcessor],
    })
    class FeatureModule {}
    @Module({
      imports: [
        WorkQueueModule.forRootAsync({
          imports: [ConfigModule],
          inject: [Config],
          useFactory: async (config: Config) => ({
            connection: { url: config.values.url },
            prefix: config.values.prefix,
            logger: false,
          }),
        }),
        FeatureModule,
      ],
    })
    class AppModule {}
    await startApp({ imports: [AppModule] });
    const check = inspector.queue<number>('async-q', prefix);
    await check.add(1);
    await check.add(-1);
    await waitFor(async () => seen.length === 2 && (await check.counts()).dead === 1);
    expect((await check.listDead())[0]).toMatchObject({ data: -1, attemptsMade: 1 });
  });
});
