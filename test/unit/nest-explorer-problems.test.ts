// What the explorer refuses at bootstrap, every problem listed at once: processors that are not
// singletons, handlers that clash, bad @Processor() arguments, queues not registered.
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  InjectQueue,
  OnWorkerEvent,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueModule,
  type ProcessorOptions,
  type WorkQueue,
} from '../../src/index.js';
import { bootstrapError, connection, explorerModules } from './nest-explorer-modules.js';

const { compile } = explorerModules();

describe('explorer', () => {
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

  it("a heartbeatIntervalMs over half its queue's heartbeatTimeoutMs is named by its processor", async () => {
    // (Refused only by the Worker's constructor, in a message that named neither.)
    @Processor('emails', { heartbeatIntervalMs: 1_500 })
    class SlowBeats {
      @Process() handle() {}
    }
    const err = await bootstrapError(await compile([SlowBeats]));
    expect(err.problems).toEqual([
      expect.stringMatching(
        /^@Processor\('emails'\) on SlowBeats: heartbeatIntervalMs must be at most half the queue's heartbeatTimeoutMs \(2000.*got 1500$/,
      ),
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

  it('problems of the processors, of the event hooks and of the workers option: one error lists them all', async () => {
    @Processor('emails', { concurrency: -1 })
    class Bad {
      @Process()
      handle() {}
    }
    @Injectable()
    class NotAProcessor {
      @OnWorkerEvent('completed')
      done() {}
    }
    const ref = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, logger: false, cleaner: false, workers: ['zzz'] }),
        WorkQueueModule.registerQueue({ name: 'emails' }),
      ],
      providers: [Bad, NotAProcessor],
    }).compile();
    const err = await bootstrapError(ref);
    await ref.close();
    expect(err.message).toMatch(/^WorkQueueModule cannot start:/);
    expect(err.problems).toEqual([
      expect.stringMatching(/zzz/),
      expect.stringMatching(/^@Processor\('emails'\) on Bad: concurrency/),
      expect.stringMatching(/NotAProcessor/),
    ]);
  });

  it('forRoot() imported twice is refused, naming both prefixes; an alias of its context is no second one', async () => {
    const aliased = await Test.createTestingModule({
      imports: [WorkQueueModule.forRoot({ connection, logger: false, cleaner: false })],
      providers: [{ provide: 'CTX', useExisting: WorkQueueContext }],
    }).compile();
    await aliased.init();
    await aliased.close();

    @Module({ imports: [WorkQueueModule.forRoot({ connection, prefix: 'b', logger: false })] })
    class Other {}
    const ref = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, prefix: 'a', logger: false, cleaner: false }),
        Other,
        WorkQueueModule.registerQueue({ name: 'emails' }),
      ],
    }).compile();
    const err = await bootstrapError(ref);
    await ref.close();
    expect(err.problems).toEqual([
      expect.stringMatching(
        /^WorkQueueModule.forRoot\(\) is imported 2 times \(each call is a module of its own; prefixes "(a|b)", "(a|b)"\): import it once/,
      ),
    ]);
  });
});
