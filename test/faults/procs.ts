/**
 * Worker processes of the fault suite: start them (worker-proc.ts or nest-worker.ts, through
 * the repository's TypeScript loader), SIGKILL or SIGTERM them, restart them, and make sure
 * none outlives the orchestrator.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LOADER = pathToFileURL(path.join(ROOT, 'scripts/register-ts.mjs')).href;

export interface Child {
  slot: number;
  pid: number;
  proc: ChildProcess;
  startedAt: number;
  /** Worker ids (one per queue) once ready. */
  workerIds: string[];
  ready: Promise<void>;
  exited: Promise<{ at: number; code: number | null; signal: string | null }>;
  output(): string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      // gone
    }
  }
});

/** A fixed number of slots, each running one worker process (restarted after a fault). */
export class Pool {
  readonly slots = new Map<number, Child>();
  /** Every process ever started, by pid. */
  readonly byPid = new Map<number, Child>();

  constructor(
    private readonly file: string,
    private readonly config: (slot: number) => object,
  ) {}

  start(slot: number, readyTimeoutMs = 30_000): Child {
    const proc = fork(path.join(ROOT, this.file), [JSON.stringify(this.config(slot))], {
      cwd: ROOT,
      execArgv: ['--import', LOADER],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    live.add(proc);
    let out = '';
    const collect = (b: Buffer) => {
      out = (out + b.toString()).slice(-8_000);
    };
    proc.stdout?.on('data', collect);
    proc.stderr?.on('data', collect);
    const exited = new Promise<{ at: number; code: number | null; signal: string | null }>(
      (resolve) => {
        proc.once('exit', (code, signal) => {
          live.delete(proc);
          resolve({ at: Date.now(), code, signal });
        });
      },
    );
    const child: Child = {
      slot,
      pid: proc.pid!,
      proc,
      startedAt: Date.now(),
      workerIds: [],
      exited,
      output: () => out,
      ready: new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`worker ${slot} not ready after ${readyTimeoutMs} ms:\n${out}`)),
          readyTimeoutMs,
        );
        proc.on('message', (m: { type?: string; workerIds?: string[] }) => {
          if (m?.type !== 'ready') return;
          clearTimeout(timer);
          child.workerIds = m.workerIds ?? [];
          resolve();
        });
        void exited.then(({ code, signal }) => {
          clearTimeout(timer);
          reject(new Error(`worker ${slot} exited (${code ?? signal}) before ready:\n${out}`));
        });
      }),
    };
    child.ready.catch(() => undefined);
    this.slots.set(slot, child);
    this.byPid.set(child.pid, child);
    return child;
  }

  async startAll(n: number): Promise<void> {
    const started = Array.from({ length: n }, (_, i) => this.start(i));
    await Promise.all(started.map((c) => c.ready));
  }

  /** SIGKILL the process in `slot`; resolves when it is gone. */
  async kill9(slot: number): Promise<{ pid: number; at: number; workerIds: string[] }> {
    const c = this.slots.get(slot)!;
    const at = Date.now();
    c.proc.kill('SIGKILL');
    await c.exited;
    return { pid: c.pid, at, workerIds: c.workerIds };
  }

  /** SIGTERM the process in `slot`; resolves with how it exited. */
  async sigterm(slot: number, timeoutMs = 20_000) {
    const c = this.slots.get(slot)!;
    const at = Date.now();
    c.proc.kill('SIGTERM');
    const timer = setTimeout(() => c.proc.kill('SIGKILL'), timeoutMs);
    const exit = await c.exited;
    clearTimeout(timer);
    return {
      pid: c.pid,
      at,
      exitedAt: exit.at,
      code: exit.code,
      signal: exit.signal,
      workerIds: c.workerIds,
    };
  }

  /** Close every live process gracefully (IPC 'close'), SIGKILL after the timeout. */
  async closeAll(timeoutMs = 10_000): Promise<void> {
    await Promise.all(
      [...this.slots.values()].map(async (c) => {
        if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
        if (c.proc.connected) c.proc.send('close');
        else c.proc.kill('SIGTERM');
        const timer = setTimeout(() => c.proc.kill('SIGKILL'), timeoutMs);
        await c.exited;
        clearTimeout(timer);
      }),
    );
  }

  /** SIGTERM every live process (Nest apps drain on it); SIGKILL after the timeout. */
  async terminateAll(timeoutMs = 10_000): Promise<void> {
    await Promise.all([...this.slots.keys()].map((s) => this.sigterm(s, timeoutMs)));
  }
}
