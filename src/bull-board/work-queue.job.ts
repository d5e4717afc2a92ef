// One of our jobs as bull-board's `QueueJob`: our states under the board's names, and each action
// the board can ask of a job mapped to the queue call that does it, or refused with a clear error.
import type {
  JobRetryStatus,
  JobState as BoardJobState,
  QueueJob,
  QueueJobJson,
  QueueJobOptions,
} from '@bull-board/api/dist/types.js';
import {
  WorkQueueError,
  type AddOptions,
  type JobInfo,
  type JobState,
  type WorkQueue,
} from '../../lib/internal.js';

/** Our job states under the board's names (pending → waiting, leased → active, dead → failed). */
export const BOARD_STATE: Readonly<Record<JobState, BoardJobState>> = {
  pending: 'waiting',
  delayed: 'delayed',
  leased: 'active',
  dead: 'failed',
  completed: 'completed',
  'waiting-children': 'waiting-children',
  unknown: 'unknown',
};

/** The error the board shows for an action that this queue cannot do (never a silent success). */
export class UnsupportedBoardActionError extends Error {
  constructor(action: string) {
    super(`nestjs-work-queue does not support "${action}" from the board`);
    this.name = 'UnsupportedBoardActionError';
  }
}

/** Options a board job shows (below) that an add does not take: left out of an add. */
const SHOWN_ONLY = new Set([
  'dueAt',
  'leaseDeadline',
  'diedAt',
  'deadReason',
  'children',
  'parent',
]);

/**
 * The options of the board's "Add job" and "Duplicate": `delay`, `attempts`, `priority` (0…9),
 * `jobId` (a caller id) and `group` (a name, or `{ id }` as a duplicated job shows it); the fields
 * a job shows but an add does not take (due time, dead reason, parent…) are left out; any other
 * option is refused, never dropped.
 */
export function boardAddOptions(options: QueueJobOptions): AddOptions {
  const { delay, attempts, priority, jobId, group, ...rest } = options as QueueJobOptions & {
    priority?: number;
    jobId?: string;
    group?: string | { id?: string };
  };
  const other = Object.keys(rest).filter((k) => !SHOWN_ONLY.has(k));
  if (other.length > 0) throw new UnsupportedBoardActionError(`add with ${other.join(', ')}`);
  // (0 and none mean the defaults, as the board's form sends them; anything else the add checks,
  // every problem listed: INVALID_ARGUMENT.)
  const groupName = typeof group === 'object' && group !== null ? group.id : group;
  return {
    ...(delay ? { delayMs: delay } : {}),
    ...(attempts ? { maxAttempts: attempts } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(jobId !== undefined && jobId !== '' ? { id: jobId } : {}),
    ...(groupName !== undefined ? { group: groupName } : {}),
  };
}

/** The name of a job the board adds: none for BullMQ's default name, which its form sends. */
export function boardName(name: string): { name?: string } {
  return name && name !== '__default__' ? { name } : {};
}

function refused(what: string, id: string, state: string): Error {
  return new Error(`${what} refused: job ${id} is ${state}`);
}

/** A queue as the board's flow view names it: `<key prefix>:<queue>`. */
export const qualifiedName = (prefix: string, queue: string) => `${prefix}:${queue}`;

/** The board's `toJSON()` shape for one of our jobs; fields we do not keep are left empty. */
export function jobJson(info: JobInfo, prefix: string): QueueJobJson {
  const at = info.at;
  // (Each once: a job dead-lettered by a thrown error has that error as its reason too.)
  const errors = [info.deadReason, info.lastError, info.decodeError].filter(
    (e, i, all): e is string => typeof e === 'string' && e.length > 0 && all.indexOf(e) === i,
  );
  return {
    id: info.id,
    name: info.name ?? '',
    data: info.data,
    // The board draws numbers as a percentage: a number up to 1 is a fraction (job.progress(0.5),
    // as our docs write it), a larger one a percentage already (BullMQ's updateProgress(50)).
    progress:
      typeof info.progress === 'number'
        ? Math.round(info.progress <= 1 ? info.progress * 100 : info.progress)
        : ((info.progress as QueueJobJson['progress'] | undefined) ?? 0),
    attemptsMade: info.attemptsMade ?? 0,
    // Redis times (docs/history.md): added, the current or last attempt's start, the end.
    timestamp: info.addedAt ?? 0,
    processedOn: info.startedAt ?? null,
    finishedOn: info.finishedAt ?? null,
    processedBy: info.processedBy ?? null,
    delay: info.state === 'delayed' && at !== undefined ? Math.max(0, at - Date.now()) : undefined,
    failedReason: errors[0] ?? '',
    stacktrace: errors.slice(1),
    returnvalue: info.result ?? null,
    priority: info.priority,
    stalledCounter: info.leaseExpiries || undefined,
    opts: {
      priority: info.priority,
      ...(info.state === 'delayed' && at !== undefined
        ? { dueAt: new Date(at).toISOString() }
        : {}),
      ...(info.state === 'leased' && at !== undefined
        ? { leaseDeadline: new Date(at).toISOString() }
        : {}),
      ...(info.state === 'dead' && at !== undefined ? { diedAt: new Date(at).toISOString() } : {}),
      ...(info.deadReason ? { deadReason: info.deadReason } : {}),
      // A grouped job's group, in BullMQ Pro's shape (the board shows the options as JSON).
      ...(info.group !== undefined ? { group: { id: info.group } } : {}),
      ...(info.children ? { children: info.children } : {}),
      ...(info.parent
        ? { parent: { id: info.parent.id, queue: qualifiedName(prefix, info.parent.queue) } }
        : {}),
    },
    // A flow child's parent, as `<queue>:<id>` (the child key of docs/flows.md).
    ...(info.parent ? { parentKey: `${info.parent.queue}:${info.parent.id}` } : {}),
  };
}

/** A job as the board holds it: a snapshot (`toJSON`) plus actions that act on the live queue. */
export class WorkQueueBoardJob implements QueueJob {
  readonly id: string;
  readonly name: string;
  /** The job's options as the board reads them off a job (`parent` walks up a flow). */
  readonly opts: QueueJobJson['opts'] & { delay?: number };
  readonly queueName: string;
  readonly queueQualifiedName: string;

  constructor(
    private readonly queue: WorkQueue,
    private readonly info: JobInfo,
  ) {
    const json = jobJson(info, queue.options.prefix);
    this.id = info.id;
    this.name = json.name;
    this.opts = { ...(json.opts as object), delay: json.delay };
    this.queueName = queue.name;
    this.queueQualifiedName = qualifiedName(queue.options.prefix, queue.name);
  }

  toJSON(): QueueJobJson {
    return jobJson(this.info, this.queue.options.prefix);
  }

  async getState(): Promise<BoardJobState> {
    const now = await this.queue.getJob(this.info.id);
    return now ? BOARD_STATE[now.state] : 'unknown';
  }

  /** Delayed → pending now (`promote`). */
  async promote(): Promise<void> {
    if (!(await this.queue.promote(this.info.id)))
      throw refused('promote', this.info.id, await this.getState());
  }

  /**
   * Removes the job wherever it is (`cancel`; a running job's worker is told to abort it; a kept
   * completed job: `purgeCompleted`).
   */
  async remove(): Promise<void> {
    if (await this.queue.cancel(this.info.id)) return;
    if ((await this.queue.purgeCompleted(this.info.id)) > 0) return;
    throw new Error(`remove refused: job ${this.info.id} no longer exists`);
  }

  /** Failed (dead) → pending, attempts reset (`retryDead`); a kept completed job runs again (`rerun`). */
  async retry(state?: JobRetryStatus): Promise<void> {
    const done =
      state === 'completed'
        ? (await this.queue.rerun(this.info.id)) !== null
        : await this.queue.retryDead(this.info.id);
    if (!done) throw refused('retry', this.info.id, await this.getState());
  }

  /** A pending or delayed job's priority (0…9, `changePriority`). */
  async changePriority(opts: { priority?: number; lifo?: boolean }): Promise<void> {
    if (opts.lifo === true) throw new UnsupportedBoardActionError('LIFO');
    if (!(await this.queue.changePriority(this.info.id, opts.priority ?? 0)))
      throw refused('change priority', this.info.id, await this.getState());
  }

  /** A waiting job's new due time, `delay` ms from now (`changeDelay`; 0 runs it now). */
  async changeDelay(delay: number): Promise<void> {
    if (!(await this.queue.changeDelay(this.info.id, Math.max(0, Math.round(delay)))))
      throw new Error(`change delay refused: job ${this.info.id} no longer exists`);
  }

  /**
   * New data for a waiting, delayed or dead job (`updateData`); a running or completed job's
   * data is refused (BAD_STATE: its handler may change it with `job.updateData`).
   */
  async updateData(data: unknown): Promise<void> {
    if (!(await this.queue.updateData(this.info.id, data)))
      throw new Error(`update data refused: job ${this.info.id} no longer exists`);
  }
}

/**
 * The board's Obliterate: refused (BAD_STATE) while workers of the queue live, unless forced (the
 * dialog's "force" box). The refusal is told in BullMQ's words, which the board shows as a queue
 * with active jobs and the force that gets past them (a 409, not a bare server error).
 */
export async function obliterateForBoard(queue: WorkQueue, force: boolean): Promise<void> {
  try {
    await queue.obliterate({ force });
  } catch (e) {
    if (!(e instanceof WorkQueueError) || e.code !== 'BAD_STATE') throw e;
    throw new Error('Cannot obliterate queue with active jobs', { cause: e });
  }
}
