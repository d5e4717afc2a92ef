/**
 * app.close() and the services a processor uses: Nest calls every onModuleDestroy before any
 * beforeApplicationShutdown, and destroys a module's providers before what they depend on. A
 * worker that drained only in the module's beforeApplicationShutdown ran its jobs after their
 * database (closed in its onModuleDestroy) had gone: they failed. Each worker now drains when its
 * processor is destroyed — before its dependencies, in the same module, an imported one or a
 * global one — and the processor's own onModuleDestroy still runs, after it.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Global, Injectable, Module, type OnModuleDestroy, type Type } from '@nestjs/common';
import { Process, Processor, WorkQueueContext, WorkQueueModule } from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp, Inspector } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
afterAll(() => inspector.close());

/** What happened, in order. */
const log: string[] = [];

@Injectable()
class Db implements OnModuleDestroy {
  closed = false;
  onModuleDestroy(): void {
    this.closed = true;
    log.push('db closed');
  }
}

let release: (() => void) | undefined;

@Processor('orders')
class OrdersProcessor implements OnModuleDestroy {
  constructor(private readonly db: Db) {}
  @Process()
  async run(): Promise<string> {
    log.push('job started');
    await new Promise<void>((r) => (release = r));
    if (this.db.closed) throw new Error('the database is closed');
    log.push('job ended');
    return 'saved';
  }
  onModuleDestroy(): void {
    log.push('processor destroyed');
  }
}

@Module({ providers: [Db], exports: [Db] })
class DbModule {}
@Global()
@Module({ providers: [Db], exports: [Db] })
class GlobalDbModule {}

const layouts: Array<[string, { imports: Type[]; providers: Type[] }]> = [
  ['the same module', { imports: [], providers: [Db, OrdersProcessor] }],
  ['an imported module', { imports: [DbModule], providers: [OrdersProcessor] }],
  ['a global module', { imports: [GlobalDbModule], providers: [OrdersProcessor] }],
];

describe('app.close() with a job running: the worker drains before the database closes', () => {
  it.each(layouts)('database in %s', async (_where, feature) => {
    log.length = 0;
    release = undefined;
    const prefix = inspector.track(uniqueName('t'));
    @Module({ imports: feature.imports, providers: feature.providers })
    class OrdersModule {}
    @Module({
      imports: [
        WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
        WorkQueueModule.registerQueue({ name: 'orders' }),
        OrdersModule,
      ],
    })
    class AppModule {}
    const app = await createNestApp({ imports: [AppModule] });
    await app.init();
    const worker = app.get(WorkQueueContext).getWorker('orders')!;
    const q = inspector.queue('orders', prefix);
    const { id } = await q.add({});
    await waitFor(() => release !== undefined, { what: 'the job running' });
    const closed = app.close();
    // The job ends once the worker began to close, or the database did (without the drain
    // first: then it fails).
    await waitFor(() => worker.liveness.paused || log.includes('db closed'), {
      what: 'the close under way',
    });
    release!();
    await closed;
    expect(log).toEqual(['job started', 'job ended', 'processor destroyed', 'db closed']);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', result: 'saved' });
  });
});

describe('app.close() with processors in two modules', () => {
  it('every worker stops leasing at once (not one module after the other), each drains its running job', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const started: Record<string, number> = { a: 0, b: 0 };
    const gates: Array<() => void> = [];
    const held = (queue: string) => async (): Promise<string> => {
      started[queue]!++;
      await new Promise<void>((r) => gates.push(r));
      return 'done';
    };
    @Processor('a')
    class AProcessor {
      @Process()
      run(): Promise<string> {
        return held('a')();
      }
    }
    @Processor('b')
    class BProcessor {
      @Process()
      run(): Promise<string> {
        return held('b')();
      }
    }
    @Module({ providers: [AProcessor] })
    class AModule {}
    @Module({ providers: [BProcessor] })
    class BModule {}
    @Module({
      imports: [
        WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
        WorkQueueModule.registerQueue({ name: 'a' }, { name: 'b' }),
        AModule,
        BModule,
      ],
    })
    class AppModule {}
    const app = await createNestApp({ imports: [AppModule] });
    await app.init();
    const context = app.get(WorkQueueContext);
    for (const name of ['a', 'b']) {
      const q = inspector.queue(name, prefix);
      for (let i = 0; i < 5; i++) await q.add({ i });
    }
    await waitFor(() => started.a === 1 && started.b === 1, { what: 'a job running in each' });
    const closed = app.close();
    // (One module after the other, the second worker went on leasing while the first drained.)
    await waitFor(() => ['a', 'b'].every((n) => context.getWorker(n)!.liveness.paused), {
      what: 'both workers closing',
    });
    for (const release of gates.splice(0)) release();
    await closed;
    expect(started).toEqual({ a: 1, b: 1 });
  });
});
