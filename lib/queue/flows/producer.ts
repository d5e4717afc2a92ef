/**
 * `FlowProducer`: adds flows — trees of jobs across queues where a parent runs once its children
 * ended (docs/flows.md) — and batches (a callback job once a set of jobs ended). Everything is
 * checked and encoded first (every problem listed with its path, nothing written), then written
 * by FlowWriter. Its deliveries (FlowDelivery) and reads go through one FlowRunner.
 */
import type { Cluster, Redis } from 'ioredis';
import { invalid, invalidOptions, WorkQueueError } from '../../errors.js';
import {
  checkName,
  clientProblems,
  queueOptionProblems,
  resolveQueueOptions,
} from '../../options.js';
import type { ResolvedQueueOptions } from '../../options.js';
import type {
  AddedBatch,
  BatchInfo,
  BatchOptions,
  FlowJob,
  FlowNode,
  FlowProducerOptions,
} from '../../types/index.js';
import { readChildCounts } from './children.js';
import { FlowDelivery } from './delivery.js';
import { FlowRunner } from './runner.js';
import { planFlows, type FlowPlan, type FlowQueueCheck } from './tree.js';
import { FlowWriter } from './writer.js';
import { str, type Reply } from '../../job/records.js';
import { optionsObject, shown } from '../../util/checks.js';

const OPTION_KEYS: ReadonlySet<string> = new Set<keyof FlowProducerOptions>([
  'prefix',
  'codec',
  'maxPayloadBytes',
  'commandTimeoutMs',
  'events',
  'replicaAcks',
  'replicaAckTimeoutMs',
  'queues',
  'logger',
]);

export class FlowProducer {
  readonly options: ResolvedQueueOptions;
  private readonly runner: FlowRunner;
  private readonly writer: FlowWriter;
  private readonly known: ReadonlySet<string> | undefined;

  /** `client`: an ioredis client or Cluster, as for `WorkQueue` (it stays the caller's). */
  constructor(
    readonly client: Redis | Cluster,
    options: FlowProducerOptions = {},
  ) {
    const problems: string[] = clientProblems(client);
    const o = (typeof options === 'object' && options !== null ? options : {}) as Record<
      string,
      unknown
    >;
    if (o !== options) problems.push('options must be an object');
    for (const k of Object.keys(o)) {
      if (!OPTION_KEYS.has(k))
        problems.push(`unknown option ${JSON.stringify(k)}; known: ${[...OPTION_KEYS].join(', ')}`);
    }
    const { queues, ...rest } = o as FlowProducerOptions;
    problems.push(...queueOptionProblems(rest));
    if (queues !== undefined) {
      if (!Array.isArray(queues)) problems.push('queues must be an array of queue names');
      else queues.forEach((q: unknown, i) => checkName(`queues[${i}]`, q, problems));
    }
    if (problems.length > 0) throw invalidOptions('invalid FlowProducer options', problems);
    this.options = resolveQueueOptions('flows', rest);
    this.known = queues ? new Set(queues) : undefined;
    this.runner = new FlowRunner(client, this.options);
    this.writer = new FlowWriter(this.runner, new FlowDelivery(this.runner));
  }

  /** Add one flow. Resolves the tree's jobs (queue and id of each node, in the tree's shape). */
  async add<T = unknown>(tree: FlowNode<T>): Promise<FlowJob> {
    return (await this.write([tree], false))[0]!;
  }

  /** Add several flows, written together (on one Redis: one script, all or nothing). */
  async addBulk(trees: ReadonlyArray<FlowNode>): Promise<FlowJob[]> {
    if (!Array.isArray(trees)) throw invalid(['addBulk takes an array of flows'], 'flows refused');
    if (trees.length === 0) return [];
    return this.write(trees, true);
  }

  /**
   * Add a batch: `jobs` run as children of `onComplete`, each with `onFailure: 'ignore'` unless
   * it says otherwise; `onComplete` runs once every job ended (completed, dead or cancelled).
   */
  async addBatch<T = unknown>(
    jobs: ReadonlyArray<Omit<FlowNode<T>, 'children'>>,
    opts: BatchOptions,
  ): Promise<AddedBatch> {
    const problems: string[] = [];
    if (!Array.isArray(jobs)) problems.push('jobs must be an array of nodes');
    else jobs.forEach((j: unknown, i) => batchJobProblems(j, i, problems));
    // (A mistyped key, e.g. BullMQ-style `onFailure` for the callback, would be ignored.)
    const cb = optionsObject('opts', opts, ['onComplete'], problems).onComplete as
      BatchOptions['onComplete'] | null | undefined;
    if (typeof cb !== 'object' || cb === null) problems.push('onComplete must be a node');
    else if ('children' in cb) problems.push('onComplete.children: a batch callback has none');
    if (problems.length > 0) throw invalid(problems, 'batch refused');
    // (`onFailure: undefined` written out is no policy given: 'ignore' too.)
    const children = jobs.map((j) => ({ ...j, onFailure: j.onFailure ?? 'ignore' }) as FlowNode);
    let added: FlowJob;
    try {
      added = await this.add({ ...cb!, children } as FlowNode);
    } catch (e) {
      throw batchPaths(e);
    }
    return {
      id: `${added.job.queue}/${added.job.id}`,
      callback: added.job,
      jobs: (added.children ?? []).map((c) => c.job),
    };
  }

  /** A batch's progress by its id (`AddedBatch.id`); null once its callback job is gone. */
  async getBatch(id: string): Promise<BatchInfo | null> {
    if (typeof id !== 'string')
      throw invalid(['a batch id is a string <queue>/<job id>'], 'getBatch refused');
    const slash = id.indexOf('/');
    const queue = slash > 0 ? id.slice(0, slash) : '';
    const jobId = id.slice(slash + 1);
    const problems: string[] = [];
    checkName('the queue of a batch id', queue, problems);
    if (jobId.length === 0 || jobId.length > 256) problems.push('a batch id is <queue>/<job id>');
    if (problems.length > 0) throw invalid(problems, 'getBatch refused');
    // { state, seq, payload, meta, score, progress }
    const r = (await this.runner.run(queue, 'get_job', [jobId])) as Reply;
    const state = str(r[0]) as BatchInfo['state'];
    if (state === 'unknown') return null;
    const none = { pending: 0, completed: 0, failed: 0, cancelled: 0 };
    const counts =
      state === 'completed' ? none : await readChildCounts(this.runner, queue, str(r[1]));
    return { id, state, ...counts };
  }

  /**
   * @internal Per queue a flow names: the options its payloads are encoded with (undefined: this
   * producer's), or why flows may not name it. Not in `queues` (when given): unknown.
   */
  protected queueCheck(queue: string): ReturnType<FlowQueueCheck> {
    return this.known && !this.known.has(queue)
      ? `unknown queue ${JSON.stringify(queue)}`
      : undefined;
  }

  private async write(trees: readonly unknown[], bulk: boolean): Promise<FlowJob[]> {
    const plan = planFlows(this.options, trees, bulk, (q) => this.queueCheck(q));
    await this.writer.write(plan);
    return plan.roots.map((r) => jobsOf(plan, r));
  }
}

/**
 * The problems of batch job `j` (at `jobs[i]`) that planning it would miss: a non-object would
 * be spread into a node of only `onFailure` (then refused for its missing data, as if the payload
 * were the problem), and a batch job's children would be planned as a tree (the type has none).
 */
function batchJobProblems(j: unknown, i: number, problems: string[]): void {
  if (typeof j !== 'object' || j === null || Array.isArray(j))
    problems.push(`jobs[${i}]: must be an object { queue, data, … }, got ${shown(j)}`);
  else if ('children' in j)
    problems.push(
      `jobs[${i}].children: a batch's jobs have none; for a tree of jobs add a flow with add(), ` +
        'whose root runs once its children ended',
    );
}

/** The added jobs of the tree rooted at node `i`. */
function jobsOf(plan: FlowPlan, i: number): FlowJob {
  const n = plan.nodes[i]!;
  const job = { queue: n.queue, id: n.cid || n.seq };
  if (n.children.length === 0) return { job };
  // Depth is bounded only by the node count: no recursion.
  const out: FlowJob = { job, children: [] };
  const stack: Array<[number, FlowJob]> = [[i, out]];
  while (stack.length > 0) {
    const [k, node] = stack.pop()!;
    for (const c of plan.nodes[k]!.children) {
      const cn = plan.nodes[c]!;
      const child: FlowJob = { job: { queue: cn.queue, id: cn.cid || cn.seq } };
      if (cn.children.length > 0) {
        child.children = [];
        stack.push([c, child]);
      }
      node.children!.push(child);
    }
  }
  return out;
}

/** Problems of a whole flow (its size), not of one of its nodes. */
const WHOLE_TREE = /^(more than \d+ nodes|payloads of \d+ bytes)/;

/**
 * Problem `p` of a batch's tree with its nodes named as the caller wrote them — at its start and
 * where it names another node (a duplicate id, two children with one key) — but not inside its
 * quoted strings (ids and queue names as JSON).
 */
function asBatch(p: string): string {
  return p
    .split(/("(?:[^"\\]|\\.)*")/)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part.replaceAll('children[', 'jobs[').replaceAll('the root', 'onComplete'),
    )
    .join('');
}

/** A refused batch's problems, named as the caller wrote them (jobs[i], onComplete). */
function batchPaths(e: unknown): unknown {
  if (!(e instanceof WorkQueueError) || e.problems.length === 0) return e;
  const renamed = e.problems.map((p) => {
    const q = asBatch(p);
    return q.startsWith('jobs[') || q.startsWith('onComplete') || WHOLE_TREE.test(q)
      ? q
      : `onComplete.${q}`;
  });
  return new WorkQueueError(e.code, `batch refused: ${renamed.join('; ')}`, renamed);
}
