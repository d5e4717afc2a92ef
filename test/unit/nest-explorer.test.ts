import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module, Scope, type Provider } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  InjectQueue,
  OnWorkerEvent,
  Process,
  Processor,
  WorkQueueError,
  WorkQueueModule,
  type Job,
  type ProcessorOptions,
  type WorkQueue,
} from '../../src/index.js';
import { WorkQueueExplorer } from '../../src/work-queue.explorer.js';
import { MemoryLogger } from '../support/nest-app.js';

// Nothing here touches Redis: the module's own connection is lazy and no worker is started
// (explore() is called directly, or init() fails before the workers would start).
const connection = { url: 'redis://127.0.0.1:1' };
const open: TestingModule[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

async function compile(
  providers: Provider[],
  queues: string[] = ['emails'],
  logger = new MemoryLogger(),
): Promise<TestingModule> {
  const ref = await Test.createTestingModule({
    imports: [
      WorkQueueModule.forRoot({ connection, logger, cleaner: false }),
      WorkQueueModule.registerQueue(...queues.map((name) => ({ name }))),
    ],
    providers,
  }).compile();
  open.push(ref);
  return ref;
}

async function bootstrapError(ref: TestingModule): Promise<WorkQueueError> {
  try {
    await ref.init();
  } catch (e) {
    expect(e).toBeInstanceOf(WorkQueueError);
    return e as WorkQueueError;
  }
  throw new Error('expected the bootstrap to fail');
}

const job = (name?: string) => ({ id: '1', name, data: null }) as unknown as Job;

describe('explorer', () => {
  it('finds processors provided with useClass, useFactory and useValue', async () => {
    @Processor('a', { concurrency: 2 })
    class ClassProcessor {
      readonly tag = 'class';
      @Process()
      handle() {
        return this.tag;
      }
    }
    @Processor('b')
    class FactoryProcessor {
      constructor(readonly tag: string) {}
      @Process('x')
      handle() {
        return this.tag;
      }
    }
    @Processor('c')
    class ValueProcessor {
      readonly tag = 'value';
      @Process('y')
      y() {
        return this.tag;
      }
      @Process()
      rest() {
        return 'rest';
      }
    }
    const ref = await compile(
      [
        { provide: 'byClass', useClass: ClassProcessor },
        { provide: 'byFactory', useFactory: () => new FactoryProcessor('factory') },
        { provide: 'byValue', useValue: new ValueProcessor() },
        { provide: 'alias', useExisting: 'byValue' },
      ],
      ['a', 'b', 'c'],
    );
    const found = ref.get(WorkQueueExplorer).explore();
    const byQueue = new Map(found.map((p) => [p.queue.name, p]));
    expect([...byQueue.keys()].sort()).toEqual(['a', 'b', 'c']);

    const a = byQueue.get('a')!;
    expect(a.classNames).toEqual(['ClassProcessor']);
    expect(a.options).toEqual({ concurrency: 2 });
    expect(a.named.size).toBe(0);
    expect(a.catchAll?.invoke(job())).toBe('class'); // bound to the instance

    const b = byQueue.get('b')!;
    expect(b.catchAll).toBeUndefined();
    expect(b.named.get('x')?.invoke(job('x'))).toBe('factory');

    const c = byQueue.get('c')!; // found once, although also provided under an alias
    expect(c.classNames).toEqual(['ValueProcessor']);
    expect(c.named.get('y')?.invoke(job('y'))).toBe('value');
    expect(c.catchAll?.methodName).toBe('rest');
    expect(c.queue).toBe(ref.get<WorkQueue>('WorkQueue:c'));
  });

  it('finds processors in imported modules', async () => {
    @Processor('emails')
    class FeatureProcessor {
      @Process()
      handle() {}
    }
    @Module({ providers: [FeatureProcessor] })
    class FeatureModule {}
    const ref = await compile([], ['emails']);
    const ref2 = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, logger: false, cleaner: false }),
        WorkQueueModule.registerQueue({ name: 'emails' }),
        FeatureModule,
      ],
    }).compile();
    open.push(ref2);
    expect(ref.get(WorkQueueExplorer).explore()).toHaveLength(0);
    const found = ref2.get(WorkQueueExplorer).explore();
    expect(found.map((p) => p.classNames)).toEqual([['FeatureProcessor']]);
  });

  it('refuses request-scoped, durable and transient processors at bootstrap, listing every one', async () => {
    @Processor('emails')
    @Injectable({ scope: Scope.REQUEST })
    class RequestProcessor {
      @Process()
      handle() {}
    }
    @Processor('emails')
    @Injectable({ scope: Scope.REQUEST, durable: true })
    class DurableProcessor {
      @Process()
      handle() {}
    }
    @Processor('emails')
    @Injectable({ scope: Scope.TRANSIENT })
    class TransientProcessor {
      @Process()
      handle() {}
    }
    @Injectable({ scope: Scope.REQUEST })
    class PerRequest {}
    @Processor('other')
    class DependsOnRequest {
      constructor(readonly dep: PerRequest) {}
      @Process()
      handle() {}
    }
    const ref = await compile(
      [RequestProcessor, DurableProcessor, TransientProcessor, PerRequest, DependsOnRequest],
      ['emails', 'other'],
    );
    const err = await bootstrapError(ref);
    expect(err.code).toBe('INVALID_OPTIONS');
    expect(err.message).toMatch(/^WorkQueueModule cannot start its processors:/);
    const scoped =
      /is request-scoped \(durable or not\), or depends on a request-scoped provider; a processor must be a singleton/;
    expect(err.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^@Processor\\('emails'\\) on RequestProcessor: ${scoped.source}`),
        ),
        expect.stringMatching(
          new RegExp(`^@Processor\\('emails'\\) on DurableProcessor: ${scoped.source}`),
        ),
        expect.stringMatching(
          /^@Processor\('emails'\) on TransientProcessor: is transient; a processor must be a singleton/,
        ),
        expect.stringMatching(
          new RegExp(`^@Processor\\('other'\\) on DependsOnRequest: ${scoped.source}`),
        ),
      ]),
    );
    expect(err.problems).toHaveLength(4);
  });

  it('rejects two methods for the same (queue, job name) at bootstrap', async () => {
    @Processor('emails')
    class EmailProcessor {
      @Process('welcome')
      first() {}
      @Process('welcome')
      second() {}
      @Process()
      any1() {}
      @Process()
      any2() {}
    }
    const err = await bootstrapError(await compile([EmailProcessor]));
    expect(err.code).toBe('INVALID_OPTIONS');
    expect(err.problems).toEqual([
      `@Processor('emails') on EmailProcessor: two @Process('welcome') methods for queue "emails": EmailProcessor.first() and EmailProcessor.second()`,
      `@Processor('emails') on EmailProcessor: two catch-all @Process() methods for queue "emails": EmailProcessor.any1() and EmailProcessor.any2()`,
    ]);
    expect(err.message.split('\n')).toHaveLength(3);
  });

  it('lets two @Processor classes share a queue when their job names do not overlap', async () => {
    @Processor('emails', { concurrency: 4 })
    class WelcomeProcessor {
      @Process('welcome')
      welcome() {
        return 'welcome';
      }
    }
    @Processor('emails')
    class RestProcessor {
      @Process()
      rest() {
        return 'rest';
      }
    }
    const ref = await compile([WelcomeProcessor, RestProcessor]);
    const [p, ...others] = ref.get(WorkQueueExplorer).explore();
    expect(others).toHaveLength(0);
    expect(p!.classNames).toEqual(['WelcomeProcessor', 'RestProcessor']);
    expect(p!.options).toEqual({ concurrency: 4 });
    expect(p!.named.get('welcome')?.invoke(job('welcome'))).toBe('welcome');
    expect(p!.catchAll?.invoke(job())).toBe('rest');
  });

  it('rejects overlapping job names and disagreeing options across classes of one queue', async () => {
    @Processor('emails', { concurrency: 4 })
    class A {
      @Process('welcome')
      welcome() {}
    }
    @Processor('emails', { concurrency: 8 })
    class B {
      @Process('welcome')
      alsoWelcome() {}
    }
    const err = await bootstrapError(await compile([A, B]));
    expect(err.problems).toEqual([
      `@Processor('emails') on B: concurrency is 8 but A (same queue, same worker) sets 4; set worker options on one of them`,
      `@Processor('emails') on B: two @Process('welcome') methods for queue "emails": A.welcome() and B.alsoWelcome()`,
    ]);
  });

  it('fails the bootstrap for a @Processor of an unregistered queue, naming the fix', async () => {
    @Processor('invoices')
    class InvoiceProcessor {
      @Process()
      handle() {}
    }
    const err = await bootstrapError(await compile([InvoiceProcessor], ['emails']));
    expect(err.message).toContain(`@Processor('invoices') on InvoiceProcessor`);
    expect(err.message).toContain(`queue "invoices" is not registered`);
    expect(err.message).toContain(`WorkQueueModule.registerQueue({ name: 'invoices' })`);
  });

  it('lists every processor problem at once', async () => {
    @Processor('invoices', { concurrency: 0, autostart: true } as ProcessorOptions)
    class Broken {
      notAHandler() {}
    }
    const err = await bootstrapError(await compile([Broken]));
    expect(err.problems).toEqual([
      `@Processor('invoices') on Broken: queue "invoices" is not registered; add WorkQueueModule.registerQueue({ name: 'invoices' }) to the imports of a module`,
      `@Processor('invoices') on Broken: autostart is not allowed: the module starts workers at application bootstrap`,
      `@Processor('invoices') on Broken: concurrency must be a positive integer, got 0`,
      `@Processor('invoices') on Broken: no @Process() method; add @Process() to the method that handles jobs`,
    ]);
  });

  it('a @Processor class with worker-event listeners only joins its queue; alone, it processes nothing and fails', async () => {
    @Processor('emails')
    class Handles {
      @Process()
      handle() {}
    }
    @Processor('emails')
    class Listens {
      @OnWorkerEvent('completed')
      completed() {}
    }
    const ref = await compile([Handles, Listens]);
    const [p] = ref.get(WorkQueueExplorer).explore();
    expect(p!.classNames).toEqual(['Handles']); // the worker's processor classes
    expect(p!.catchAll?.className).toBe('Handles');

    const alone = await bootstrapError(await compile([Listens]));
    expect(alone.problems).toEqual([
      `@Processor('emails') on Listens: no @Process() method; add @Process() to the method that handles jobs`,
    ]);
  });

  it('bad @Processor() arguments are problems of the bootstrap, listed with the rest', async () => {
    // (They were TypeErrors: `s.replace is not a function` at init, or at the file's import
    // for options of null.)
    const P = Processor as unknown as (...a: unknown[]) => ClassDecorator;
    @P({ name: 'emails' })
    class BullStyle {
      @Process() handle() {}
    }
    @P()
    class NoName {
      @Process() handle() {}
    }
    @P('emails', null)
    class NullOptions {
      @Process() handle() {}
    }
    const err = await bootstrapError(await compile([BullStyle, NoName, NullOptions]));
    expect(err.code).toBe('INVALID_OPTIONS');
    expect(err.problems).toEqual([
      `@Processor({"name":"emails"}) on BullStyle: the queue name must be a non-empty string (@nestjs/bullmq's @Processor({ name }) is @Processor(name) here)`,
      '@Processor(undefined) on NoName: the queue name must be a non-empty string',
      expect.stringMatching(/^@Processor\('emails'\) on NullOptions: .*null/),
    ]);
  });

  it('fails the bootstrap when an unregistered queue is injected, with a readable token', async () => {
    @Injectable()
    class Sender {
      constructor(@InjectQueue('invoices') readonly queue: WorkQueue) {}
    }
    const failure = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, logger: false }),
        WorkQueueModule.registerQueue({ name: 'emails' }),
      ],
      providers: [Sender],
    })
      .compile()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toContain('WorkQueue:invoices');
    expect((failure as Error).message).toContain('Sender');
  });
});
