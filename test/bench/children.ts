/**
 * Starting benchmark children (test/bench/child.ts) from run.ts: one per measurement, or
 * `procs` coordinated ones over IPC for the multi-process figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LibName } from './libs/types.js';
import type { Settings } from './options.js';
import type { Measurement } from './row.js';
import type {
  ChildFailure,
  ChildMessage,
  ChildParams,
  ChildResult,
  ParentMessage,
} from './protocol.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Children still running (killed on SIGINT and at the end). */
export const live = new Set<ChildProcess>();

interface Spawned {
  child: ChildProcess;
  result: Promise<ChildResult>;
}

export function spawnChild(
  s: Settings,
  lib: LibName,
  m: Measurement,
  params: ChildParams,
  tag: string,
): Spawned {
  const nodeArgs: string[] = [...(m.nodeArgs ?? [])];
  if (s.cpuProf) {
    // One directory per child: each thread (main, loader hooks, heartbeat) writes its own file.
    const dir = path.join(ROOT, '.tmp', 'bench-prof', tag);
    mkdirSync(dir, { recursive: true });
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', dir);
  }
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '--import',
      './scripts/register-ts.mjs',
      'test/bench/child.ts',
      lib,
      m.kind,
      JSON.stringify(params),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', ...(m.procs > 1 ? ['ipc' as const] : [])] },
  );
  live.add(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
    if (err.length > 64 * 1024) err = err.slice(-64 * 1024);
  });
  const killTimer = setTimeout(() => child.kill('SIGKILL'), params.timeoutMs + 15_000);
  const result = new Promise<ChildResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(killTimer);
      live.delete(child);
      const last = out.trim().split('\n').pop() ?? '';
      let line: ChildResult | ChildFailure | undefined;
      try {
        line = JSON.parse(last) as ChildResult | ChildFailure;
      } catch {
        line = undefined;
      }
      if (line?.ok) {
        if (err.trim()) process.stderr.write(indent(`[${tag}] stderr:\n${err.trim()}`));
        resolve(line);
        return;
      }
      const why = line
        ? line.error
        : `exit code ${code}, signal ${signal}, stdout ${JSON.stringify(last)}`;
      reject(new Error(`${why}${err.trim() ? `\n--- stderr ---\n${err.trim()}` : ''}`));
    });
  });
  return { child, result };
}

export const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n') + '\n';

/** `procs` coordinated worker processes on one queue: total jobs/s, first start → last end. */
export async function runMulti(
  s: Settings,
  lib: LibName,
  m: Measurement,
  base: ChildParams,
  tag: string,
): Promise<ChildResult> {
  const children = Array.from({ length: m.procs }, (_, index) =>
    spawnChild(s, lib, m, { ...base, procs: m.procs, index }, `${tag}-p${index}`),
  );
  const counts = new Array<number>(m.procs).fill(0);
  let readyCount = 0;
  let stopped = false;
  const send = (msg: ParentMessage) => {
    for (const { child } of children) if (child.connected) child.send(msg);
  };
  const allReady = new Promise<void>((resolve) => {
    children.forEach(({ child }, i) => {
      child.on('message', (msg: ChildMessage) => {
        if (msg.type === 'ready' && ++readyCount === m.procs) resolve();
        if (msg.type === 'count') {
          counts[i] = msg.completed;
          if (!stopped && counts.reduce((a, b) => a + b, 0) >= base.n) {
            stopped = true;
            send({ type: 'stop' });
          }
        }
      });
    });
  });
  // The first child to fail fails the run: the others would wait for a go / stop forever.
  const firstFailure = new Promise<never>((_, reject) => {
    for (const c of children) c.result.catch(reject);
  });
  let ok: ChildResult[];
  try {
    await Promise.race([allReady, firstFailure]);
    send({ type: 'go' });
    ok = await Promise.race([Promise.all(children.map((c) => c.result)), firstFailure]);
  } catch (e) {
    for (const { child } of children) child.kill('SIGKILL');
    await Promise.allSettled(children.map((c) => c.result));
    throw e;
  }
  const jobs = ok.reduce((a, r) => a + (r.jobs ?? 0), 0);
  // A process that got no job at all (small n, many processes) has no start or end: 0.
  const busy = ok.filter((r) => (r.jobs ?? 0) > 0);
  const startAt = Math.min(...busy.map((r) => r.startAt ?? NaN));
  const lastAt = Math.max(...busy.map((r) => r.lastAt ?? NaN));
  if (jobs < base.n) throw new Error(`only ${jobs} of ${base.n} jobs completed`);
  const seconds = (lastAt - startAt) / 1000;
  return {
    ok: true,
    lib,
    kind: 'process',
    value: jobs / seconds,
    jobs,
    seconds,
    startAt,
    lastAt,
    failedAttempts: ok.reduce((a, r) => a + (r.failedAttempts ?? 0), 0),
  };
}
