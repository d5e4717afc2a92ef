/**
 * Bad sandbox options fail at construction or at `start()` (INVALID_OPTIONS, every problem
 * listed), never at the first job: a module that is missing, has no default export, throws while
 * loading or in its setup.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { Worker, WorkQueueError } from '../../../lib/index.js';
import type { SandboxOptions } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { fixture, MODES, sandboxWorkers, TS_LOADER } from './support.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = sandboxWorkers();

/** The pids of this process' children (Linux: /proc/<pid>/task/<tid>/children). */
function childPids(): number[] {
  const tasks = `/proc/${process.pid}/task`;
  return readdirSync(tasks).flatMap((t) =>
    readFileSync(`${tasks}/${t}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
}

function thrown(f: () => unknown): WorkQueueError {
  try {
    f();
  } catch (e) {
    return e as WorkQueueError;
  }
  throw new Error('did not throw');
}

describe('sandbox options', () => {
  it('are checked at construction, every problem listed with the worker options', () => {
    const q = fx.queue();
    const bad = {
      file: 'relative/handler.js',
      mode: 'fiber',
      poolSize: 0,
      memoryLimitMb: -5,
      execArgv: '--inspect',
      abortGraceMs: 1.5,
      startTimeoutMs: 2 ** 31,
      poolsize: 2,
    } as unknown as SandboxOptions;
    const e = thrown(() => new Worker(q, bad, { concurrency: 0, autostart: false }));
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toEqual([
      'sandbox.poolsize is not a known option',
      'sandbox.file must be absolute, got "relative/handler.js"',
      "sandbox.mode must be 'thread' or 'process', got \"fiber\"",
      'sandbox.poolSize must be a positive integer, got 0',
      'sandbox.memoryLimitMb must be a positive integer, got -5',
      'sandbox.abortGraceMs must be an integer >= 0, got 1.5',
      expect.stringMatching(/^sandbox\.startTimeoutMs must be at most 2147483647/),
      'sandbox.execArgv must be an array of strings, got "--inspect"',
      'concurrency must be a positive integer, got 0',
    ]);
    // Past a timer's range (Node would fire it at once: the sandbox ended 1 ms after an abort).
    const grace = thrown(
      () => new Worker(q, { file: fixture('handler.ts'), mode: 'thread', abortGraceMs: 2 ** 31 }),
    );
    expect(grace.problems).toEqual([
      expect.stringMatching(/^sandbox\.abortGraceMs must be at most 2147483647/),
    ]);
  });

  it('refuse a file that does not exist, a URL of another scheme, and a handler of neither form', () => {
    const q = fx.queue();
    const missing = fixture('missing.ts');
    expect(thrown(() => new Worker(q, { file: missing, mode: 'thread' })).problems).toEqual([
      `sandbox.file does not exist: ${missing}`,
    ]);
    const url = new URL('https://example.com/handler.js');
    expect(thrown(() => new Worker(q, { file: url, mode: 'process' })).problems).toEqual([
      'sandbox.file must be a file: URL',
    ]);
    expect(thrown(() => new Worker(q, 42 as never)).problems).toEqual([
      'handler must be a function or sandbox options { file, mode }, got 42',
    ]);
  });
});

describe.each(MODES)('a %s sandbox whose module cannot run', (mode) => {
  it('a Node option Node refuses: start() fails with INVALID_OPTIONS naming it', async () => {
    const q = fx.queue();
    const options = { file: fixture('handler.ts'), mode, execArgv: [...TS_LOADER, '--no-such'] };
    // (A start timer left armed would fire within the next test, failing this file.)
    const w = worker(q, { ...options, startTimeoutMs: 200 }, { autostart: false });
    const e = (await errorOf(w.start())) as WorkQueueError;
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems.join(' ')).toMatch(/--no-such|exited with code 9/);
    expect((await q.counts()).workers).toBe(0);
  });

  it('a setup that never ends: start() rejects once startTimeoutMs passed, not a hang', async () => {
    const q = fx.queue();
    const options = { file: fixture('setup-hangs.ts'), mode, execArgv: TS_LOADER };
    const w = worker(q, { ...options, startTimeoutMs: 1_500 }, { autostart: false });
    const e = (await errorOf(w.start())) as WorkQueueError;
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.problems).toEqual([expect.stringMatching(/not ready within 1500 ms/)]);
    expect((await q.counts()).workers).toBe(0);
  });

  it.each([
    ['no-default.ts', /no-default\.ts has no default export function \(the handler\)/],
    ['throws-at-load.ts', /throws-at-load\.ts could not be loaded: boom at load/],
    ['setup-throws.ts', /setup-throws\.ts setup failed: no database/],
  ])(
    '%s fails start() with INVALID_OPTIONS; no job runs, no worker is registered',
    async (file, problem) => {
      const q = fx.queue();
      const { id } = await q.add({});
      const w = worker(q, { file: fixture(file), mode, execArgv: TS_LOADER }, { autostart: false });
      const before = childPids();
      const e = (await w.start().then(
        () => undefined,
        (x: unknown) => x,
      )) as WorkQueueError;
      expect(e).toBeInstanceOf(WorkQueueError);
      expect(e.code).toBe('INVALID_OPTIONS');
      expect(e.problems).toEqual([expect.stringMatching(problem)]);
      expect(await q.getJob(id)).toMatchObject({ state: 'pending' });
      expect((await q.counts()).workers).toBe(0);
      // Its sandbox process is gone (reaped) by then: none of this process' children is new.
      if (mode === 'process')
        expect(childPids().filter((pid) => !before.includes(pid))).toEqual([]);
    },
  );
});
