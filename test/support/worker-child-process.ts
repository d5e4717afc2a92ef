/**
 * Start test/fixtures/worker-child.ts in a child process (plain node + the swc loader) and
 * talk to it: wait until its Worker is started, ask it to close, or SIGKILL it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildConfig } from '../fixtures/worker-child.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHILD = path.join(ROOT, 'test/fixtures/worker-child.ts');
const LOADER = pathToFileURL(path.join(ROOT, 'scripts/register-ts.mjs')).href;

export type { ChildConfig };

export interface WorkerChild {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Resolves the worker id once the child's Worker has started (registered, leasing). */
  readonly ready: Promise<string>;
  /** What the child wrote to stdout/stderr (for failure messages). */
  output(): string;
  /** Ask the child to close its worker and exit; resolves on exit (SIGKILL after timeoutMs). */
  close(timeoutMs?: number): Promise<void>;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  readonly exited: Promise<void>;
}

export function startWorkerChild(
  config: ChildConfig,
  { readyTimeoutMs = 15_000 } = {},
): WorkerChild {
  const child = fork(CHILD, [JSON.stringify(config)], {
    cwd: ROOT,
    execArgv: ['--import', LOADER],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  const collect = (b: Buffer) => {
    out = (out + b.toString()).slice(-16_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`worker child not ready after ${readyTimeoutMs} ms:\n${out}`)),
      readyTimeoutMs,
    );
    child.on('message', (m: { type?: string; workerId?: string }) => {
      if (m?.type === 'ready') {
        clearTimeout(timer);
        resolve(String(m.workerId));
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`worker child exited before it was ready:\n${out}`));
    });
  });
  ready.catch(() => undefined);
  return {
    process: child,
    pid: child.pid!,
    ready,
    exited,
    output: () => out,
    async close(timeoutMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.send('close');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Lines of a `<jobId> <pid> [<leased at>]` log written by the child (missing file: none). */
export function readLog(file: string): Array<{ id: string; pid: number; at?: number }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const [id, pid, at] = l.split(' ');
      return at === undefined
        ? { id: id!, pid: Number(pid) }
        : { id: id!, pid: Number(pid), at: Number(at) };
    });
}
