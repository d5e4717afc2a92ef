// How the explorer finds the @Processor classes of an app and puts them together per queue (what
// it refuses is nest-explorer-problems.test.ts).
import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  OnWorkerEvent,
  Process,
  Processor,
  WorkQueueModule,
  type WorkQueue,
} from '../../src/index.js';
import { WorkQueueExplorer } from '../../src/work-queue.explorer.js';
import { bootstrapError, connection, explorerModules, job } from './nest-explorer-modules.js';

const { compile, open } = explorerModules();

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

  it('two classes of one name share a queue; one class provided in two modules is found twice', async () => {
    // (Two feature modules may each have a class named Handler: told apart by identity.)
    const handler = (jobName: string) => {
      @Processor('emails')
      class Handler {
        @Process(jobName)
        handle() {
          return jobName;
        }
      }
      return Handler;
    };
    const ref = await compile([handler('a'), handler('b')]);
    const [p, ...others] = ref.get(WorkQueueExplorer).explore();
    expect(others).toHaveLength(0);
    expect(p!.classNames).toEqual(['Handler', 'Handler']);
    expect(p!.named.get('a')?.invoke(job('a'))).toBe('a');
    expect(p!.named.get('b')?.invoke(job('b'))).toBe('b');

    const Twice = handler('c');
    @Module({ providers: [Twice] })
    class One {}
    @Module({ providers: [Twice] })
    class Two {}
    const twice = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, logger: false, cleaner: false }),
        WorkQueueModule.registerQueue({ name: 'emails' }),
        One,
        Two,
      ],
    }).compile();
    open.push(twice);
    expect((await bootstrapError(twice)).problems).toEqual([
      `@Processor('emails') on Handler: found twice (is Handler provided in more than one module? Provide it once)`,
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
});
