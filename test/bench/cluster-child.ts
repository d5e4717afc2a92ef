/**
 * One worker process of the cluster benchmark (test/bench/cluster.ts), started by
 * cluster-measure.ts with `--child <config json>`: it connects, says it is ready, and on "go"
 * runs one Worker (no-op handler) until its queue's jobs are all completed, then reports the wall
 * times of its first handler call and its last completion.
 */
import { Cluster, Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../lib/index.js';
import { CLUSTER_CLIENT_OPTIONS, type ClusterNodeAddress } from '../support/redis-cluster.js';
import { errorText, wallMs } from './util.js';

export type Target = 'single' | 'cluster';

export interface ChildConfig {
  target: Target;
  /** single: one node; cluster: the seed nodes. */
  nodes: ClusterNodeAddress[];
  queue: string;
  n: number;
  concurrency: number;
  timeoutMs: number;
}

export type ToParent =
  | { type: 'ready' }
  | { type: 'done'; first: number; last: number; completed: number }
  | { type: 'error'; error: string };
export type ToChild = { type: 'go' } | { type: 'stop' };

async function child(config: ChildConfig): Promise<void> {
  const send = (m: ToParent) =>
    new Promise<void>((resolve) => (process.send ? process.send(m, () => resolve()) : resolve()));
  const client: Redis | Cluster =
    config.target === 'cluster'
      ? new Cluster(config.nodes, CLUSTER_CLIENT_OPTIONS)
      : new Redis({ host: config.nodes[0]!.host, port: config.nodes[0]!.port });
  client.on('error', () => {
    /* reconnects by itself; failures surface through commands */
  });
  const queue = new WorkQueue<{ i: number }, void>(client, config.queue);
  let first = 0;
  let last = 0;
  let completed = 0;
  let finish: () => void = () => {};
  const allDone = new Promise<void>((r) => (finish = r));
  const worker = new Worker<{ i: number }, void>(
    queue,
    () => {
      if (first === 0) first = wallMs();
    },
    { concurrency: config.concurrency, autostart: false },
  );
  worker.on('completed', () => {
    completed++;
    if (completed === config.n) {
      last = wallMs();
      finish();
    }
  });
  worker.on(
    'failed',
    (_job, e) => void send({ type: 'error', error: `job failed: ${errorText(e)}` }),
  );
  worker.on('error', (e) => process.stderr.write(`[child ${config.queue}] ${errorText(e)}\n`));
  const timer = setTimeout(() => {
    void send({
      type: 'error',
      error: `${config.queue}: only ${completed} of ${config.n} jobs within ${config.timeoutMs} ms`,
    }).then(() => process.exit(1));
  }, config.timeoutMs);
  await queue.ready();
  const go = new Promise<void>((resolve) =>
    process.on('message', (m: ToChild) => {
      if (m.type === 'go') resolve();
      if (m.type === 'stop') process.exit(1);
    }),
  );
  await send({ type: 'ready' });
  await go;
  await worker.start();
  await allDone;
  clearTimeout(timer);
  await worker.close();
  await client.quit().catch(() => {});
  await send({ type: 'done', first, last, completed });
  process.exit(0);
}

if (process.argv[2] === '--child') {
  child(JSON.parse(process.argv[3]!) as ChildConfig).catch(async (e: unknown) => {
    process.send?.({ type: 'error', error: errorText(e) } satisfies ToParent);
    setTimeout(() => process.exit(1), 100);
  });
}
