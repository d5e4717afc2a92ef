/**
 * Producer-only and worker-only instances (`forRoot({ workers })`, `registerQueue({ workers })`):
 * one codebase, two deployments — a web app that only adds jobs and a worker app that processes
 * them, sharing a Redis and a prefix. The web app starts no worker, opens no connection besides
 * its one client (no blocking read, no heartbeat), is healthy and alive without workers of its
 * own, and shuts down without waiting for jobs that run elsewhere. Bad `workers` options fail the
 * bootstrap with every problem listed.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Module, type INestApplication, type Type } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../src/health/index.js';
import {
  InjectQueue,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueError,
  WorkQueueModule,
  type Job,
  type RegisterQueueOptions,
  type WorkQueue,
  type WorkQueueModuleOptions,
} from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp, Inspector, MemoryLogger } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
const apps: INestApplication[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await inspector.close();
});

/** The app's module: the same for both deployments, only `workers` differs. */
function appModule(
  options: Partial<WorkQueueModuleOptions>,
  providers: Type[],
  queues: RegisterQueueOptions[] = [{ name: 'emails' }],
): Type {
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, ...options }),
      WorkQueueModule.registerQueue(...queues),
      TerminusModule,
      WorkQueueHealthModule,
    ],
    providers,
  })
  class AppModule {}
  return AppModule;
}

async function start(module: Type): Promise<INestApplication> {
  const app = await createNestApp({ imports: [module] });
  apps.push(app);
  await app.init();
  return app;
}

/** The connections Redis sees under a client name, with their last command. */
async function connectionsNamed(name: string): Promise<string[]> {
  const list = (await inspector.client.call('CLIENT', 'LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => /\bcmd=(\S+)/.exec(line)?.[1] ?? '?');
}

describe('the workers option', () => {
  it('web (workers: false) adds, worker (workers: true) processes; the web app opens one connection and closes at once', async () => {
    const prefix = inspector.track(uniqueName('roles'));
    const [webName, workerName] = [uniqueName('web'), uniqueName('worker')];
    const url = new URL(testRedisUrl());
    const connection = (connectionName: string) => ({
      redis: { host: url.hostname, port: Number(url.port), connectionName },
    });
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const ran: string[] = [];

    // One codebase: the same processor and producer in both apps.
    @Processor('emails')
    class EmailsProcessor {
      @Process()
      async send(job: Job<{ to: string; hold?: boolean }>) {
        ran.push(job.data.to);
        if (job.data.hold) await hold;
      }
    }
    class Emails {
      constructor(
        @InjectQueue('emails') readonly queue: WorkQueue<{ to: string; hold?: boolean }>,
      ) {}
    }
    const logger = new MemoryLogger();
    const web = await start(
      appModule({ connection: connection(webName), prefix, logger, workers: false }, [
        EmailsProcessor,
        Emails,
      ]),
    );
    const worker = await start(
      appModule({ connection: connection(workerName), prefix, workers: true }, [EmailsProcessor]),
    );

    expect(web.get(WorkQueueContext).getWorker('emails')).toBeUndefined();
    expect(web.get(WorkQueueContext).workers).toEqual([]);
    expect(worker.get(WorkQueueContext).getWorker('emails')).toBeDefined();
    expect(logger.messages('log')).toContain(
      'worker of queue "emails" not started in this instance (workers option; EmailsProcessor)',
    );

    const emails = web.get(Emails).queue;
    await emails.add({ to: 'a@example.com' });
    await emails.add({ to: 'b@example.com', hold: true });
    await waitFor(() => ran.length === 2, { what: 'both jobs run by the worker app' });
    expect(ran).toEqual(['a@example.com', 'b@example.com']);
    // (a's complete lands after its handler returned: one job left leased, the held one.)
    await waitFor(async () => (await inspector.queue('emails', prefix).counts()).leased === 1, {
      what: "a's completion",
    });

    // The web app talks to Redis over its one client: no blocking read, no subscriber, no
    // heartbeat thread's connection (they would carry its name too). The worker app has them.
    expect(await connectionsNamed(webName)).toHaveLength(1);
    expect((await connectionsNamed(workerName)).length).toBeGreaterThanOrEqual(3);

    // Readiness: the queue's workers are counted across instances; the web app runs none itself
    // and is up, with minWorkers too. Liveness: up, no workers of its own.
    const webHealth = web.get(WorkQueueHealthIndicator);
    const ready = (await webHealth.isHealthy('queues', { minWorkers: 1 })).queues;
    expect(ready).toMatchObject({
      status: 'up',
      queues: { emails: { workers: 1, localWorker: false, leased: 1 } },
    });
    const workerReady = await worker.get(WorkQueueHealthIndicator).isHealthy('queues');
    expect(workerReady.queues).toMatchObject({ queues: { emails: { localWorker: true } } });
    expect((await webHealth.isAlive('queues')).queues).toMatchObject({ status: 'up', workers: {} });

    // The web app's shutdown waits for no job: the held one is still running when it resolves.
    await web.close();
    apps.splice(apps.indexOf(web), 1);
    expect(worker.get(WorkQueueContext).getWorker('emails')!.activeCount).toBe(1);
    release();
    await waitFor(async () => (await inspector.queue('emails', prefix).counts()).leased === 0, {
      what: 'the held job done',
    });
  });

  it('registerQueue({ workers }) overrides forRoot({ workers }) per queue; a list names the queues', async () => {
    const processor = (queue: string): Type => {
      @Processor(queue)
      class P {
        @Process()
        handle() {}
      }
      Object.defineProperty(P, 'name', { value: `${queue}Processor` });
      return P;
    };
    const providers = ['a', 'b', 'c'].map(processor);
    const runs = async (
      workers: WorkQueueModuleOptions['workers'],
      queues: RegisterQueueOptions[],
    ) => {
      const prefix = inspector.track(uniqueName('roles'));
      const app = await start(appModule({ prefix, logger: false, workers }, providers, queues));
      const context = app.get(WorkQueueContext);
      const running = ['a', 'b', 'c'].filter((q) => context.getWorker(q) !== undefined);
      await app.close();
      apps.splice(apps.indexOf(app), 1);
      return running;
    };
    expect(await runs(false, [{ name: 'a', workers: true }, { name: 'b' }, { name: 'c' }])).toEqual(
      ['a'],
    );
    expect(await runs(true, [{ name: 'a' }, { name: 'b', workers: false }, { name: 'c' }])).toEqual(
      ['a', 'c'],
    );
    expect(
      await runs(['b', 'c'], [{ name: 'a' }, { name: 'b' }, { name: 'c', workers: false }]),
    ).toEqual(['b']);
    expect(await runs([], [{ name: 'a' }, { name: 'b' }, { name: 'c' }])).toEqual([]);
    expect(await runs(undefined, [{ name: 'a' }, { name: 'b' }, { name: 'c' }])).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('bad workers options fail the bootstrap, every problem listed; nothing is written', async () => {
    const prefix = inspector.track(uniqueName('roles'));
    const failure = async (
      options: Partial<WorkQueueModuleOptions>,
      queues?: RegisterQueueOptions[],
    ) => {
      const app = createNestApp({
        imports: [appModule({ prefix, logger: false, ...options }, [], queues)],
      });
      try {
        apps.push(await app);
        await apps[apps.length - 1]!.init();
      } catch (e) {
        expect(e).toBeInstanceOf(WorkQueueError);
        expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
        return (e as WorkQueueError).problems;
      }
      throw new Error('expected the bootstrap to fail');
    };
    expect(
      await failure({ workers: ['emails', 'emial', 'reports'] }, [
        { name: 'emails' },
        { name: 'audit' },
      ]),
    ).toEqual([
      'workers names queues that are not registered: "emial", "reports" (registered: "emails", "audit")',
    ]);
    expect(
      await failure({ workers: 'false' as unknown as boolean, shutdownTimeoutMs: -1 }),
    ).toEqual([
      'shutdownTimeoutMs must be an integer >= 0, got -1',
      'workers must be true, false or an array of queue names, got "false"',
    ]);
    expect(await failure({ workers: ['emails', 3] as unknown as string[] })).toEqual([
      'workers must be true, false or an array of queue names, got ["emails",3]',
    ]);
    expect(await failure({}, [{ name: 'emails', workers: 'no' as unknown as boolean }])).toEqual([
      'workers must be true or false, got "no"',
    ]);
    expect(await inspector.client.keys(`${prefix}:*`)).toEqual([]);
  });
});
