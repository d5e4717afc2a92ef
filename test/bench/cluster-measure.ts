/**
 * One measurement of the cluster benchmark (test/bench/cluster.ts): fill K queues, start one
 * worker process per queue (cluster-child.ts), and time them from a common "go".
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import type { RedisClusterHandle } from '../support/redis-cluster.js';
import type { RedisHandle } from '../support/redis-server.js';
import type { ChildConfig, Target, ToChild, ToParent } from './cluster-child.js';

const CHILD = fileURLToPath(new URL('./cluster-child.ts', import.meta.url));
const ROOT = path.resolve(path.dirname(CHILD), '../..');

function waitMessage(
  c: ChildProcess,
  type: 'ready' | 'done',
  ms: number,
): Promise<Extract<ToParent, { type: 'ready' | 'done' }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`child: no '${type}' within ${ms} ms`)), ms);
    const onMessage = (m: ToParent) => {
      if (m.type === 'error') done(new Error(m.error));
      else if (m.type === type) done(undefined, m);
    };
    const onExit = (code: number | null, signal: string | null) =>
      done(new Error(`child exited (${code ?? signal}) before '${type}'`));
    const done = (e?: Error, m?: Extract<ToParent, { type: 'ready' | 'done' }>) => {
      clearTimeout(timer);
      c.off('message', onMessage);
      c.off('exit', onExit);
      if (e) reject(e);
      else resolve(m!);
    };
    c.on('message', onMessage);
    c.once('exit', onExit);
  });
}

export interface Env {
  single: RedisHandle;
  cluster: RedisClusterHandle;
  singleClient: Redis;
  clusterClient: Cluster;
}

/** One measurement: jobs/s of K workers (one child process each) draining K pre-filled queues. */
export async function measure(
  env: Env,
  target: Target,
  names: string[],
  s: { n: number; concurrency: number },
): Promise<number> {
  if (target === 'single') {
    await env.singleClient.flushall();
  } else {
    for (const m of await env.cluster.masters()) await env.cluster.command(m.port, 'FLUSHALL');
  }
  const client = target === 'single' ? env.singleClient : env.clusterClient;
  for (const name of names) {
    const q = new WorkQueue<{ i: number }>(client, name);
    for (let i = 0; i < s.n; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, s.n - i) }, (_, j) => ({
        data: { i: i + j },
      }));
      await q.addBulk(batch);
    }
  }
  const nodes =
    target === 'single' ? [{ host: env.single.host, port: env.single.port }] : env.cluster.nodes;
  const timeoutMs = 60_000 + Math.ceil((s.n * names.length) / 200);
  const children = names.map((queue) => {
    const config: ChildConfig = {
      target,
      nodes,
      queue,
      n: s.n,
      concurrency: s.concurrency,
      timeoutMs,
    };
    return fork(CHILD, ['--child', JSON.stringify(config)], {
      cwd: ROOT,
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  });
  try {
    await Promise.all(children.map((c) => waitMessage(c, 'ready', 60_000)));
    const done = children.map((c) => waitMessage(c, 'done', timeoutMs + 10_000));
    for (const c of children) c.send({ type: 'go' } satisfies ToChild);
    const results = (await Promise.all(done)) as Array<Extract<ToParent, { type: 'done' }>>;
    const first = Math.min(...results.map((r) => r.first));
    const last = Math.max(...results.map((r) => r.last));
    const total = results.reduce((a, r) => a + r.completed, 0);
    if (total !== s.n * names.length)
      throw new Error(`completed ${total} of ${s.n * names.length}`);
    return (total * 1000) / (last - first);
  } finally {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }
  }
}
