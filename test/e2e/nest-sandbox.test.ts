/**
 * Sandboxed processors (`@Processor(queue, { sandbox: { module, mode } })`), in a thread and in a
 * process: each sandbox boots its own application context of the module and calls the processor
 * resolved there, with a provider of the module and one of a @Global() module injected; the
 * worker events of the processor are told in the main application; app.close() closes every
 * sandbox and its context. Bad sandbox options and a module without the processor fail the
 * bootstrap with every problem listed.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, Module, type INestApplication, type LogLevel, type Type } from '@nestjs/common';
import { Process, Processor, WorkQueueError, WorkQueueModule } from '../../src/index.js';
import {
  ImagesModule,
  PROCESS_QUEUE,
  ProcessImagesProcessor,
  THREAD_QUEUE,
  ThreadImagesProcessor,
  type Resized,
} from '../fixtures/sandbox/nest/images.processor.js';
import { closedMarker } from '../fixtures/sandbox/nest/images.service.js';
import {
  BrokenAProcessor,
  BrokenBProcessor,
  BrokenCProcessor,
} from '../fixtures/sandbox/nest/broken.processor.js';
import { OrphanProcessor } from '../fixtures/sandbox/nest/orphan.processor.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp, Inspector } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
afterAll(() => inspector.close());

/** An app with the queues and `imports`/`providers`; its prefix. */
async function createApp(
  queues: string[],
  more: { imports?: Type[]; providers?: Type[]; logger?: LogLevel[] },
) {
  const prefix = inspector.track(uniqueName('t'));
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
      WorkQueueModule.registerQueue(
        ...queues.map((name) => ({ name, storeResults: { ttlMs: 60_000 } })),
      ),
      ...(more.imports ?? []),
    ],
    providers: more.providers ?? [],
  })
  class AppModule {}
  const app = await createNestApp({
    imports: [AppModule],
    ...(more.logger ? { app: { logger: more.logger } } : {}),
  });
  return { app, prefix };
}

/** The bootstrap's error. */
async function bootstrapError(app: INestApplication): Promise<WorkQueueError> {
  try {
    await app.init();
  } catch (e) {
    return e as WorkQueueError;
  } finally {
    await app.close();
  }
  throw new Error('the bootstrap did not fail');
}

describe('sandboxed processors', () => {
  it('run in a thread and in a process with injected providers; app.close() closes every sandbox and its context', async () => {
    const { app, prefix } = await createApp([THREAD_QUEUE, PROCESS_QUEUE], {
      imports: [ImagesModule],
    });
    const results: Record<string, Resized> = {};
    try {
      await app.init();
      for (const name of [THREAD_QUEUE, PROCESS_QUEUE]) {
        const q = inspector.queue<{ width: number }>(name, prefix);
        const { id } = await q.add({ width: 300 }, { name: 'resize' });
        const other = await q.add({ width: 1 });
        const [resized, unnamed] = await waitFor(
          async () => {
            const [a, b] = [await q.getJob(id), await q.getJob(other.id)];
            return a?.state === 'completed' && b?.state === 'completed' ? [a, b] : undefined;
          },
          { timeoutMs: 20_000, what: `${name} jobs completed` },
        );
        results[name] = resized.result as Resized;
        expect(unnamed.result).toBe('other (unnamed)');
      }
      // The processor's worker events are told in the main application.
      for (const processor of [ThreadImagesProcessor, ProcessImagesProcessor])
        expect(app.get(processor).told).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^active /),
            expect.stringMatching(/^progress \S+ 0.5$/),
            expect.stringMatching(/^progress \S+ 1$/),
          ]),
        );
    } finally {
      await app.close();
    }
    const inThread = results[THREAD_QUEUE]!;
    const inProcess = results[PROCESS_QUEUE]!;
    for (const r of [inThread, inProcess])
      expect(r).toMatchObject({ result: 'resized to 300px', greeting: 'hello' });
    expect(inThread.pid).toBe(process.pid);
    expect(inThread.threadId).not.toBe(threadId);
    expect(inProcess.pid).not.toBe(process.pid);
    // Each sandbox closed its application context (its providers' shutdown hooks ran there)
    // before app.close() resolved; the process sandbox is gone.
    for (const r of [inThread, inProcess]) {
      const marker = closedMarker(r.pid, r.threadId);
      expect(existsSync(marker)).toBe(true);
      rmSync(marker);
    }
    expect(() => process.kill(inProcess.pid, 0)).toThrow(/ESRCH/);
  }, 60_000);

  it("a sandboxed processor's Nest Logger logs at the main application's levels", async () => {
    // (Its context booted with errors and warnings only, and its handlers' Logger.log/debug
    // lines were dropped.)
    const { app, prefix } = await createApp([THREAD_QUEUE, PROCESS_QUEUE], {
      imports: [ImagesModule],
      logger: ['debug', 'warn', 'error'],
    });
    try {
      await app.init();
      const all = ['verbose', 'debug', 'log', 'warn', 'error', 'fatal'] as const;
      const mainLevels = all.filter((l) => Logger.isLevelEnabled(l));
      for (const name of [THREAD_QUEUE, PROCESS_QUEUE]) {
        const q = inspector.queue(name, prefix);
        const { id } = await q.add(null, { name: 'log-levels' });
        const done = await waitFor(
          async () => {
            const job = await q.getJob(id);
            return job?.state === 'completed' ? job : undefined;
          },
          { timeoutMs: 20_000, what: `${name}: the job` },
        );
        expect(done.result).toEqual(expect.arrayContaining(['debug', 'warn', 'error']));
        expect(done.result).not.toContain('log');
        expect(done.result).toEqual(mainLevels);
      }
    } finally {
      await app.close();
    }
  });

  it('fail the bootstrap when the sandbox module does not provide the processor', async () => {
    const { app } = await createApp(['orphans'], { providers: [OrphanProcessor] });
    const e = await bootstrapError(app);
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toEqual([
      expect.stringMatching(
        /^@Processor\('orphans'\) on OrphanProcessor: sandbox.module EmptyModule does not provide the class: /,
      ),
    ]);
  }, 30_000);

  it('fail the bootstrap when sandbox modules cannot boot: every processor listed by name', async () => {
    const { app } = await createApp(['broken-a', 'broken-b'], {
      providers: [BrokenAProcessor, BrokenBProcessor],
    });
    const e = await bootstrapError(app);
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect([...e.problems].sort()).toEqual(
      ['BrokenAProcessor', 'BrokenBProcessor'].map(
        (name, i) =>
          `@Processor('broken-${'ab'[i]}') on ${name}: its sandbox module failed to boot: cannot reach the image service`,
      ),
    );
  }, 30_000);

  it('fail the bootstrap when a sandbox ends as its module boots: named by its processor', async () => {
    // (It said only "the sandbox (thread 2) ended before it was ready", under the heading
    // "sandbox …/host.ts cannot run jobs".)
    const { app } = await createApp(['broken-c'], { providers: [BrokenCProcessor] });
    const e = await bootstrapError(app);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.message).toMatch(/^a sandboxed processor cannot start:/);
    expect(e.problems).toEqual([
      expect.stringMatching(
        /^@Processor\('broken-c'\) on BrokenCProcessor: the sandbox \(thread \d+\) ended before it was ready: exited with code 4$/,
      ),
    ]);
  }, 30_000);

  it('fail the bootstrap on bad sandbox options, every problem listed', async () => {
    @Processor('bad', {
      sandbox: { module: 'ImagesModule', mode: 'fiber', poolSize: 0, extra: 1 } as never,
    })
    class BadSandbox {
      @Process() handle() {}
    }
    @Processor('shared', { sandbox: { module: ImagesModule, mode: 'thread' } })
    class SandboxedA {
      @Process('a') a() {}
    }
    @Processor('shared')
    class PlainB {
      @Process('b') b() {}
    }
    const { app } = await createApp(['bad', 'shared'], {
      providers: [BadSandbox, SandboxedA, PlainB],
    });
    const e = await bootstrapError(app);
    expect(e.code).toBe('INVALID_OPTIONS');
    const at = "@Processor('bad') on BadSandbox: ";
    expect(e.problems).toEqual([
      `${at}sandbox.extra is not a known option`,
      `${at}sandbox.module must be a Nest module (a class, a dynamic module, forwardRef(() => TheModule) or () => import(…)), got "ImagesModule"`,
      `${at}sandbox.mode must be 'thread' or 'process', got "fiber"`,
      `${at}sandbox.poolSize must be a positive integer, got 0`,
      'queue "shared": a sandboxed @Processor() must be the queue\'s only one, got SandboxedA, PlainB',
    ]);
  });
});

describe("a sandbox module whose file imports the processor's file", () => {
  // Written at run time: the repository's import rules forbid cycles in its files.
  const dir = fileURLToPath(new URL('../.sandbox-cycle/', import.meta.url));
  const header = [
    "import { forwardRef, Module } from '@nestjs/common';",
    "import { Process, Processor } from '../../src/index.js';",
    "import { TS_LOADER } from '../fixtures/sandbox/loader.js';",
  ].join('\n');
  const files: Record<string, string> = {
    'cycle.processor.ts': `${header}
import { CycleModule } from './cycle.module.js';
@Processor('cycle', { sandbox: { module: forwardRef(() => CycleModule), mode: 'thread', execArgv: TS_LOADER } })
export class CycleProcessor { @Process() handle() { return 'cycle'; } }
void Module;
`,
    'cycle.module.ts': `import { Module } from '@nestjs/common';
import { CycleProcessor } from './cycle.processor.js';
@Module({ providers: [CycleProcessor] })
export class CycleModule {}
`,
    'lazy.processor.ts': `${header}
@Processor('lazy', { sandbox: { module: () => import('./lazy.module.js').then((m) => m.LazyModule), mode: 'thread', execArgv: TS_LOADER } })
export class LazyProcessor { @Process() handle() { return 'lazy'; } }
void forwardRef, Module;
`,
    'lazy.module.ts': `import { Module } from '@nestjs/common';
import { LazyProcessor } from './lazy.processor.js';
@Module({ providers: [LazyProcessor] })
export class LazyModule {}
`,
  };
  beforeAll(() => {
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const load = async (name: string, exported: string) =>
    ((await import(path.join(dir, name))) as Record<string, Type>)[exported]!;

  it('named with forwardRef: the bootstrap fails, saying to name the module lazily', async () => {
    const { app } = await createApp(['cycle'], {
      imports: [await load('cycle.module.ts', 'CycleModule')],
    });
    const e = await bootstrapError(app);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toEqual([
      expect.stringMatching(
        /^@Processor\('cycle'\) on CycleProcessor: importing \S+cycle\.processor\.ts failed: .*name the module lazily: sandbox: \{ module: \(\) => import\(/,
      ),
    ]);
  }, 30_000);

  it('named lazily, () => import(…): its jobs run', async () => {
    const { app, prefix } = await createApp(['lazy'], {
      imports: [await load('lazy.module.ts', 'LazyModule')],
    });
    try {
      await app.init();
      const q = inspector.queue('lazy', prefix);
      const { id } = await q.add({});
      const job = await waitFor(
        async () => {
          const j = await q.getJob(id);
          return j?.state === 'completed' ? j : undefined;
        },
        { timeoutMs: 20_000, what: 'the job completed' },
      );
      expect(job.result).toBe('lazy');
    } finally {
      await app.close();
    }
  }, 30_000);
});
