// `WorkQueueAdapter`: a `WorkQueue` on bull-board (@bull-board/api). Counts, paged listings, the
// job view and the actions the queue can honour; the rest answer an error the board shows.
import { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';
import type {
  AppJobScheduler,
  JobCleanStatus,
  JobCounts,
  JobSchedulerUpdateResult,
  JobStatus,
  QueueAdapterOptions,
  QueueJob,
  QueueJobOptions,
  QueueMetrics,
  MetricsType,
  QueueRateLimit,
  QueueWorker,
  Status,
} from '@bull-board/api/dist/types.js';
import { bounded, redisError } from '../../lib/internal.js';
import type { JobInfo, ListState, WorkQueue } from '../../lib/internal.js';
import { boardLogs, boardMetrics, boardWorker } from './history.js';
import { boardAddOptions, boardName, obliterateForBoard, qualifiedName } from './work-queue.job.js';
import { UnsupportedBoardActionError, WorkQueueBoardJob } from './work-queue.job.js';

/** Options of `WorkQueueAdapter`: bull-board's own adapter options. */
export type WorkQueueAdapterOptions = Partial<
  Pick<
    QueueAdapterOptions,
    'readOnlyMode' | 'allowRetries' | 'prefix' | 'description' | 'displayName' | 'delimiter'
  >
>;

/** The board's job statuses we can list, each with the state of ours it shows. */
const LISTED: ReadonlyArray<readonly [JobStatus, ListState]> = [
  ['active', 'leased'],
  ['waiting', 'pending'],
  ['delayed', 'delayed'],
  ['failed', 'dead'],
  ['completed', 'completed'],
  ['waiting-children', 'waiting-children'],
];
const OUR_STATE = new Map<string, ListState>(LISTED);
/** Largest page the core lists at once. */
const PAGE = 1000;

/** A `WorkQueue` on bull-board: `createBullBoard({ queues: [new WorkQueueAdapter(queue)] })`. */
export class WorkQueueAdapter<T = unknown, R = unknown> extends BaseAdapter {
  constructor(
    private readonly queue: WorkQueue<T, R>,
    options: WorkQueueAdapterOptions = {},
  ) {
    // 'bullmq' is the board's richer UI (priorities, global concurrency); a kept completed job
    // can be run again (`rerun`).
    super('bullmq', { ...options, allowCompletedRetries: true });
  }

  private get q(): WorkQueue {
    return this.queue as unknown as WorkQueue;
  }

  getName(): string {
    return `${this.prefix}${this.queue.name}`;
  }

  /** `<key prefix>:<queue>`: how a flow child names its parent's queue (`opts.parent.queue`). */
  getQueueQualifiedName(): string {
    return qualifiedName(this.queue.options.prefix, this.queue.name);
  }

  /**
   * The board's flow tree reads a BullMQ FlowProducer: none here, so the job's flow view is empty
   * (the parent of a child and the counts of a parent's children are in the job's options).
   */
  async getFlowProducer(): Promise<null> {
    return null;
  }

  /** Only the statuses we have: no paused (queue-wide here). */
  getStatuses(): Status[] {
    return ['latest', ...LISTED.map(([s]) => s)];
  }

  getJobStatuses(): JobStatus[] {
    return LISTED.map(([s]) => s);
  }

  async getJobCounts(): Promise<JobCounts> {
    const c = await this.queue.counts();
    return {
      latest: 0,
      active: c.leased,
      waiting: c.pending,
      delayed: c.delayed,
      failed: c.dead,
      completed: c.completed,
      paused: 0,
      prioritized: 0,
      'waiting-children': c.waitingChildren,
    };
  }

  /**
   * Jobs `start..end` (inclusive, as the board pages) of each status, in the order the queue
   * takes them. An unknown status, or a page past the end, is an empty list.
   */
  async getJobs(statuses: JobStatus[], start = 0, end = 9): Promise<QueueJob[]> {
    const from = Number.isSafeInteger(start) && start >= 0 ? start : 0;
    const to = Number.isSafeInteger(end) ? Math.min(end, from + PAGE - 1) : from;
    if (to < from) return [];
    const pages = await Promise.all(
      (Array.isArray(statuses) ? statuses : []).map((s) => {
        const state = OUR_STATE.get(s);
        return state
          ? this.q.getJobs(state, { offset: from, limit: to - from + 1 })
          : Promise.resolve([] as JobInfo[]);
      }),
    );
    return pages.flat().map((info) => new WorkQueueBoardJob(this.q, info));
  }

  /** One job in any state, a completed one with its result while results are stored. */
  async getJob(id: string): Promise<QueueJob | null> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 256) return null;
    const info = await this.q.getJob(id);
    return info ? new WorkQueueBoardJob(this.q, info) : null;
  }

  /** The job's log (`job.log` lines), its newest 1 000 lines; none once the job is gone. */
  getJobLogs(id: string): Promise<string[]> {
    return boardLogs(this.q, id);
  }

  /**
   * Per-minute counts of the last 24 hours (`getMetrics`): completed jobs, and for the board's
   * "failed" the dead-lettered ones (BullMQ's failed are final failures).
   */
  async getMetrics(type: MetricsType, start = 0, end = -1): Promise<QueueMetrics> {
    const m = await this.queue.getMetrics(type === 'completed' ? 'completed' : 'dead');
    return boardMetrics(m, Date.now(), start, end);
  }

  /** The registered workers (`getWorkers`): the board's worker count and list. */
  override async getWorkers(): Promise<QueueWorker[]> {
    const now = Date.now();
    return (await this.queue.getWorkers()).map((w) => boardWorker(w, now));
  }

  /** Redis' INFO for the board's stats, bounded as every call is (`commandTimeoutMs`). */
  async getRedisInfo(): Promise<string | null> {
    const { client, name, options } = this.queue;
    const context = `queue ${name}: redis info`;
    try {
      return await bounded(client, options.commandTimeoutMs, context, () => client.info());
    } catch (e) {
      throw redisError(context, e);
    }
  }

  /** Adds a job (the board's "Add job" and "Duplicate"): see `boardAddOptions`. */
  async addJob(name: string, data: unknown, options: QueueJobOptions = {}): Promise<QueueJob> {
    const { id } = await this.q.add(data, {
      ...boardName(name),
      ...boardAddOptions(options),
    });
    const info = await this.q.getJob(id);
    return new WorkQueueBoardJob(this.q, info ?? { id, state: 'unknown', name, data });
  }

  /**
   * "Clean all" of a status: waiting → `drain()`, failed → `purgeDead()`, completed →
   * `purgeCompleted()` (with a grace time: only those finished longer ago), delayed → each
   * delayed job cancelled, page by page. Active (running) jobs cannot be cleaned in bulk.
   */
  async clean(status: JobCleanStatus, graceTimeMs = 0): Promise<void> {
    // ('waiting' is the board's name of the status, 'wait' BullMQ's: both drain.)
    if (status === 'wait' || (status as string) === 'waiting') await this.queue.drain();
    else if (status === 'failed') await this.queue.purgeDead();
    else if (status === 'completed') await this.cleanCompleted(graceTimeMs);
    else if (status === 'delayed') await this.eachDelayed((id) => this.queue.cancel(id));
    else throw new UnsupportedBoardActionError(`clean ${status} jobs`);
  }

  private async cleanCompleted(graceTimeMs: number): Promise<void> {
    if (!(Number.isFinite(graceTimeMs) && graceTimeMs > 0)) {
      await this.queue.purgeCompleted();
      return;
    }
    // Newest first: skip those within the grace time, purge the rest page by page.
    const before = Date.now() - graceTimeMs;
    let offset = 0;
    for (;;) {
      const page = await this.q.getJobs('completed', { offset, limit: PAGE });
      if (page.length === 0) return;
      let kept = 0;
      for (const j of page) {
        if ((j.finishedAt ?? 0) >= before) kept++;
        else await this.queue.purgeCompleted(j.id);
      }
      offset += kept;
      if (page.length < PAGE) return;
    }
  }

  /** Removes every waiting and delayed job (`drain({ delayed: true })`); running jobs stay. */
  async empty(): Promise<void> {
    await this.queue.drain({ delayed: true });
  }

  /** `obliterate`: refused while workers live, unless forced (see obliterateForBoard). */
  obliterate(opts: { force?: boolean } = {}): Promise<void> {
    return obliterateForBoard(this.queue, opts.force === true);
  }

  async promoteAll(): Promise<void> {
    await this.eachDelayed((id) => this.queue.promote(id));
  }

  isPaused(): Promise<boolean> {
    return this.queue.isPaused();
  }

  pause(): Promise<void> {
    return this.queue.pause();
  }

  resume(): Promise<void> {
    return this.queue.resume();
  }

  async getGlobalConcurrency(): Promise<number | null> {
    return (await this.queue.flowState()).globalConcurrency;
  }

  setGlobalConcurrency(concurrency: number): Promise<void> {
    return this.queue.setGlobalConcurrency(concurrency > 0 ? concurrency : null);
  }

  override get supportsGlobalRateLimit(): boolean {
    return true;
  }

  override async getConfiguredRateLimit(): Promise<QueueRateLimit | null> {
    const limit = (await this.queue.flowState()).rateLimit;
    return limit ? { max: limit.max, duration: limit.durationMs } : null;
  }

  override setConfiguredRateLimit(limit: QueueRateLimit): Promise<void> {
    return this.queue.setRateLimit({ max: limit.max, durationMs: limit.duration });
  }

  override removeConfiguredRateLimit(): Promise<void> {
    return this.queue.setRateLimit(null);
  }

  override async getActiveRateLimitTtl(): Promise<number> {
    const until = (await this.queue.flowState()).rateLimitedUntil;
    return until > Date.now() ? until - Date.now() : 0;
  }

  override async releaseActiveRateLimit(): Promise<void> {
    throw new UnsupportedBoardActionError('release an active rate limit');
  }

  // Schedules are not shown on the board (yet): none listed, none changed.
  async getJobSchedulers(): Promise<Omit<AppJobScheduler, 'queueName'>[]> {
    return [];
  }

  async getJobSchedulersCount(): Promise<number> {
    return 0;
  }

  async removeJobScheduler(): Promise<boolean> {
    throw new UnsupportedBoardActionError('remove a schedule');
  }

  async updateJobScheduler(): Promise<JobSchedulerUpdateResult> {
    throw new UnsupportedBoardActionError('update a schedule');
  }

  async runJobSchedulerNow(): Promise<QueueJob | 'not-found'> {
    throw new UnsupportedBoardActionError('run a schedule now');
  }

  /** Applies `act` to every delayed job, a page at a time, each job at most once. */
  private async eachDelayed(act: (id: string) => Promise<boolean>): Promise<void> {
    const seen = new Set<string>();
    for (;;) {
      const page = (await this.q.getJobs('delayed', { offset: 0, limit: PAGE })).filter(
        (j) => !seen.has(j.id),
      );
      if (page.length === 0) return;
      for (const j of page) {
        seen.add(j.id);
        await act(j.id);
      }
    }
  }
}
