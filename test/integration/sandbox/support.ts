/**
 * Shared by the sandbox tests: the fixture handler module, and the Node options a sandbox needs
 * to run TypeScript sources (Jest compiles in-process; a sandbox is a new thread or process).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach } from '@jest/globals';
import { Worker } from '../../../lib/index.js';
import type {
  Handler,
  SandboxMode,
  SandboxOptions,
  WorkerOptions,
  WorkQueue,
} from '../../../lib/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** `--import` of the repository's TypeScript loader (scripts/register-ts.mjs). */
export const TS_LOADER = [
  '--import',
  pathToFileURL(path.join(ROOT, 'scripts/register-ts.mjs')).href,
];

/** A fixture of test/fixtures/sandbox/ as an absolute path. */
export const fixture = (name: string): string => path.join(ROOT, 'test/fixtures/sandbox', name);

export const MODES: readonly SandboxMode[] = ['thread', 'process'];

/** Sandbox options running test/fixtures/sandbox/handler.ts. */
export function handlerSandbox(
  mode: SandboxMode,
  extra: Partial<SandboxOptions> = {},
): SandboxOptions {
  return { file: fixture('handler.ts'), mode, execArgv: TS_LOADER, ...extra };
}

/**
 * `worker(q, handler, options)` for one test file, taking the sandbox form too: every worker it
 * makes is closed after each test (with `closeTimeoutMs`, default 0).
 */
export function sandboxWorkers(closeTimeoutMs = 0) {
  const workers: Worker<never, never>[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: closeTimeoutMs })));
  });
  return function worker<T, R>(
    q: WorkQueue<T, R>,
    h: Handler<T, R> | SandboxOptions,
    o: WorkerOptions = {},
  ): Worker<T, R> {
    const w = new Worker(q, h, o);
    workers.push(w as unknown as Worker<never, never>);
    return w;
  };
}
