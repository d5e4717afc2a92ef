/**
 * The administration half of `WorkQueue`: looking at and managing jobs (cancel, get, counts,
 * clean, repair), schedules, dead letters, flow control and listings. See work-queue.ts.
 */
import type {
  FlowState,
  CleanReport,
  GroupInfo,
  DeadJob,
  JobInfo,
  Lease,
  ListState,
  PageOptions,
  QueueCounts,
  RateLimit,
  RepairReport,
  ScheduleInfo,
  ScheduleSpec,
  ScheduleTemplate,
  UpsertScheduleOutcome,
} from '../types/index.js';

import { invalid } from '../errors.js';
import { shown } from '../util/checks.js';
import { nestedUnknown } from '../util/unknown-options.js';
import { QueueHistory } from './queue-history.js';
import type { WaitForResultOptions } from './results.js';

const BULLMQ_CLEAN =
  "clean() takes no arguments: it is maintenance (lapsed leases, due delayed jobs, expired results); BullMQ's clean(grace, limit, type) is purgeCompleted() or purgeDead() here";

export class QueueAdmin<T = unknown, R = unknown> extends QueueHistory<T, R> {
  // ---------------------------------------------------------------- managing

  /**
   * The job stops existing wherever it is. When a live worker holds it (running, prefetched or
   * handed off), cancel resolves once that worker has acknowledged that it will never start the
   * job (its signal aborts if it runs), or after `commandTimeoutMs` when it does not answer.
   */
  cancel(id: string): Promise<boolean> {
    return this.admin.cancel(id);
  }

  getJob(id: string): Promise<JobInfo<T, R> | null> {
    return this.admin.getJob(id);
  }

  /**
   * Wait for job `id` to finish, whether it already has or not: resolves with its result
   * (`undefined` unless `storeResults` keeps results), rejects with a JobOutcomeError when it is
   * dead (code JOB_DEAD, with the reason) or cancelled (JOB_CANCELLED), NOT_FOUND when no such
   * job exists (a finished job is known only while its result or caller id is kept), TIMEOUT
   * after `timeoutMs` (default 30 000), ABORTED when `signal` fires. Needs the event log (the
   * `events` option); a failed attempt that will be retried is not an outcome.
   */
  waitForResult(id: string, opts: WaitForResultOptions = {}): Promise<R | undefined> {
    return this.results.wait(id, opts);
  }

  /** A completed job's stored result (when `storeResults` is on and it has not expired). */
  async getResult(id: string): Promise<R | undefined> {
    const info = await this.admin.getJob(id);
    return info?.state === 'completed' ? info.result : undefined;
  }

  counts(): Promise<QueueCounts> {
    return this.admin.counts();
  }

  /**
   * counts(), the pending entries of cancelled or replaced jobs left out when nothing else is
   * counted and at most `upTo` entries are pending: whenIdle's read (nestjs-work-queue/testing).
   * @internal
   */
  countsForIdle(upTo: number): Promise<QueueCounts> {
    return this.admin.counts(upTo);
  }

  /**
   * Reclaim expired leases (to the front, counting a lease expiry), reclaim the leases of
   * workers whose heartbeat lapsed, promote due delayed jobs, drop expired results.
   * Cost is proportional to the work found.
   */
  clean(): Promise<CleanReport> {
    // BullMQ's clean(grace, limit, type) deletes jobs: its arguments are refused, not ignored
    // (one other value is a callback's: promise.then(queue.clean.bind(queue))).
    // eslint-disable-next-line prefer-rest-params -- a rest parameter would be public API
    if (typeof arguments[0] === 'number' || arguments.length > 1)
      return Promise.reject(invalid([BULLMQ_CLEAN], `${this.name}: clean refused`));
    return this.admin.clean();
  }

  /**
   * `clean()`, at most once per `intervalMs` across every process that calls this (workers and
   * the Nest cleaner do, every interval): the first to set the queue's guard key cleans. The
   * guard lives slightly less than the interval, so the one that cleaned last is not locked out
   * of its own next round. Resolves the report, or undefined when another cleaned this round.
   */
  async cleanIfDue(intervalMs: number, owner: string): Promise<CleanReport | undefined> {
    return (await this.admin.takeCleanGuard(intervalMs, owner)) ? this.clean() : undefined;
  }

  /**
   * Deep check: walk the queue incrementally for jobs that break an invariant, and fix each
   * one atomically. Finds nothing in normal operation.
   */
  repair(): Promise<RepairReport> {
    return this.admin.repair();
  }

  // ---------------------------------------------------------------- schedules

  /**
   * Create or change schedule `id` (docs/schedules.md): each tick adds `template` as job
   * `<id>:<tick ms>`, once across all processes, never early on Redis time. The same schedule
   * again: 'unchanged', nothing written; a change takes effect from the next tick.
   */
  upsertSchedule(
    id: string,
    spec: ScheduleSpec,
    template: ScheduleTemplate<T>,
  ): Promise<UpsertScheduleOutcome> {
    return this.schedules.upsert(id, spec, template);
  }

  /** Stop schedule `id` and drop its ticks not yet fired. False when there is no such schedule. */
  removeSchedule(id: string): Promise<boolean> {
    return this.schedules.remove(id);
  }

  /** Schedule `id` with its next and last fire times, or null. */
  getSchedule(id: string): Promise<ScheduleInfo<T> | null> {
    return this.schedules.get(id);
  }

  /** A page of the schedules, by id. */
  listSchedules(opts: { offset?: number; limit?: number } = {}): Promise<ScheduleInfo<T>[]> {
    return this.schedules.list(opts);
  }

  // ---------------------------------------------------------------- dead letters

  /** A page of the dead-letter set, oldest first. */
  listDead(opts: { offset?: number; limit?: number } = {}): Promise<DeadJob<T>[]> {
    return this.dead.list(opts);
  }

  /** Requeue a dead job, attempts reset (false: not dead); `{ all: true }`: all, paged (count). */
  retryDead(id: string): Promise<boolean>;
  retryDead(opts: { all: true }): Promise<number>;
  retryDead(what: string | { all: true }): Promise<boolean | number> {
    if (typeof what !== 'object' || what === null) return this.dead.retry(what as string);
    // { all: true }: nothing else (an unknown key or another value is refused, never ignored).
    const problems: string[] = [];
    nestedUnknown('retryDead options', what, ['all'], problems);
    if ((what as { all?: unknown }).all !== true)
      problems.push(`retryDead takes a job id or { all: true }, got all: ${shown(what.all)}`);
    if (problems.length > 0) return Promise.reject(invalid(problems, 'retryDead refused'));
    return this.listings.retryAllDead();
  }

  /** Purge one dead job, or (no id) the whole dead-letter set. Resolves how many were purged. */
  purgeDead(id?: string): Promise<number> {
    return this.dead.purge(id);
  }

  // ---------------------------------------------------------------- flow control and listings

  /** Pause the whole queue (stored in Redis): no worker leases; running jobs finish; adds queue. */
  pause(): Promise<void> {
    return this.flow.pause();
  }

  /** Resume a paused queue; every worker leases again at once. */
  resume(): Promise<void> {
    return this.flow.resume();
  }

  /** The queue's flow control settings as stored in Redis (pause, limits, rate-limited until). */
  flowState(): Promise<FlowState> {
    return this.flow.state();
  }

  /** Whether the queue is paused (`pause()`), as stored in Redis. */
  async isPaused(): Promise<boolean> {
    return (await this.flow.state()).paused;
  }

  /** At most `max` leases in any `durationMs` of Redis time, queue-wide; null removes it. */
  setRateLimit(limit: RateLimit | null): Promise<void> {
    return this.flow.setRateLimit(limit);
  }

  /** At most `n` jobs leased at once, queue-wide (all workers, all processes); null: no limit. */
  setGlobalConcurrency(n: number | null): Promise<void> {
    return this.flow.setGlobalConcurrency(n);
  }

  /**
   * Give a job back to the front, no attempt counted, and stop the queue's leasing (a grouped
   * job: its group's) for `ms`; `held`: leases of its worker whose jobs have NOT started (its
   * prefetched ones), given back to the front before it — a running job's lease given here would
   * let another worker start that job again.
   */
  rateLimited(lease: Lease, ms: number, held?: readonly Lease[]): Promise<number> {
    return this.flow.rateLimited(lease, ms, held);
  }

  // ---------------------------------------------------------------- groups (docs/groups.md)

  /** Group `group` starts no job until `resumeGroup` (its running jobs finish; adds queue). */
  pauseGroup(group: string): Promise<void> {
    return this.groups.pause(group);
  }

  /** Let a paused group start jobs again. */
  resumeGroup(group: string): Promise<void> {
    return this.groups.resume(group);
  }

  /**
   * At most `n` jobs of `group` leased at once (all workers, all processes), over the queue's
   * `groups.concurrency`; null: back to that default.
   */
  setGroupConcurrency(group: string, n: number | null): Promise<void> {
    return this.groups.setConcurrency(group, n);
  }

  /** At most `max` leases of `group` per `durationMs`, over `groups.limiter`; null: the default. */
  setGroupRateLimit(group: string, limit: RateLimit | null): Promise<void> {
    return this.groups.setRateLimit(group, limit);
  }

  /** A page of the groups with pending, running or paused state, by name. */
  getGroups(opts: { offset?: number; limit?: number } = {}): Promise<GroupInfo[]> {
    return this.groups.list(opts);
  }

  /** Remove a group's pending jobs, 1 000 per script call (leased and delayed ones stay). */
  drainGroup(group: string): Promise<number> {
    return this.groups.drain(group);
  }

  // ---------------------------------------------------------------- listings

  /**
   * A page of jobs in `state`, in the order the queue takes them (docs/flow-control.md); pending:
   * the ungrouped jobs, then each group's by group name, or with `group` that group's only.
   */
  getJobs(state: ListState, opts?: PageOptions): Promise<JobInfo<T, R>[]> {
    return this.listings.getJobs(state, opts);
  }

  /** Run a delayed job now (to the back of its priority). False when it is not delayed. */
  promote(id: string): Promise<boolean> {
    return this.listings.promote(id);
  }

  /** New priority of a pending (to the back of its new list) or delayed job; false otherwise. */
  changePriority(id: string, priority: number): Promise<boolean> {
    return this.listings.changePriority(id, priority);
  }

  /** Remove waiting (`delayed: true`: and delayed) jobs, 1 000 per script call; leased stay. */
  async drain(opts: { delayed?: boolean } = {}): Promise<number> {
    return this.listings.drain(flagOption('drain', opts, 'delayed'));
  }

  /**
   * Remove every key of the queue but its three counters (ids, lease tokens, worker ids), 1 000
   * elements per call; `BAD_STATE` if workers live, unless `force`.
   */
  async obliterate(opts: { force?: boolean } = {}): Promise<void> {
    return this.listings.obliterate(flagOption('obliterate', opts, 'force'));
  }
}

/** The one boolean option `key` of `op`'s options (undefined: false); anything else refused. */
function flagOption(op: string, opts: unknown, key: string): boolean {
  const problems: string[] = [];
  const o = (opts ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object') problems.push(`${op} options must be an object { ${key}? }`);
  else {
    nestedUnknown(`${op} options`, o, [key], problems);
    if (o[key] !== undefined && typeof o[key] !== 'boolean')
      problems.push(`${op} ${key} must be a boolean, got ${shown(o[key])}`);
  }
  if (problems.length > 0) throw invalid(problems, `${op} refused`);
  return o[key] === true;
}
