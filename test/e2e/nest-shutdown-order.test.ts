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
