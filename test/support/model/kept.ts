/**
 * The model's kept completed jobs (keepCompleted, docs/history.md): what completes is kept with
 * its data, times and worker, the newest MODEL_QUEUE.keepCompleted.count by (finish time, seq);
 * a caller id names its kept job until a newer job takes it or the kept one is trimmed.
 * Finish times are Redis times the model cannot know before: a step reports them (`finish`).
 */
import type { Redis } from 'ioredis';
import type { WorkQueue } from '../../../lib/index.js';
import { MODEL_QUEUE, type ModelJob, type Payload } from './types.js';

export interface KeptJob {
  seq: string;
  id: string;
  cid?: string;
  data: Payload;
  priority: number;
  /** Failed attempts plus the one that completed. */
  attemptsMade: number;
  progress?: unknown;
  addedAt?: number;
  startedAt?: number;
  /** The worker of the lease that completed it ('0': no worker). */
  processedBy: string;
  /** Redis ms; undefined until `finish` learns it. */
  finishedAt?: number;
  /** Its group, kept with it. */
  group?: string;
  /** A flow child's parent (its public id), kept with it. */
  parent?: string;
}

export class Kept {
  readonly jobs = new Map<string, KeptJob>();
  /** Caller id -> seq of the kept job it names ('~<until>:<seq>' in the caller-id index). */
  readonly cids = new Map<string, string>();
  /** Completed since the last `finish`, waiting for their finish time. */
  private unfinished: KeptJob[] = [];

  /** `job` completed by a lease of worker `workerId` (a flow child: of parent `parent`). */
  completed(job: ModelJob, workerId: string, parent?: string): void {
    const k: KeptJob = {
      seq: job.seq,
      id: job.id,
      data: job.data,
      priority: job.priority,
      attemptsMade: job.attempts + 1,
      processedBy: workerId,
    };
    if (job.cid !== undefined) k.cid = job.cid;
    if (job.progress !== undefined) k.progress = job.progress;
    if (job.addedAt !== undefined) k.addedAt = job.addedAt;
    if (job.startedAt !== undefined) k.startedAt = job.startedAt;
    if (job.group !== undefined) k.group = job.group;
    if (parent !== undefined) k.parent = parent;
    this.jobs.set(job.seq, k);
    if (job.cid !== undefined) this.cids.set(job.cid, job.seq);
    this.unfinished.push(k);
  }

  /** A new job takes caller id `cid`. */
  added(cid: string): void {
    this.cids.delete(cid);
  }

  /**
   * The completions since the last call finished at `now` (one call's Redis time), or, unknown,
   * at the times Redis kept (a job trimmed by its own call finished with the newest kept); then
   * the oldest beyond the count go.
   */
  async finish(q: WorkQueue<Payload>, redis: Redis, now?: number): Promise<void> {
    const fresh = this.unfinished;
    this.unfinished = [];
    if (fresh.length === 0) return;
    if (now === undefined) {
      const key = q.keys.key('completedJobs');
      const scores = await Promise.all(fresh.map((k) => redis.zscore(key, k.seq)));
      const newest = Number((await redis.zrange(key, '-1', '-1', 'WITHSCORES'))[1] ?? 0);
      fresh.forEach((k, i) => (k.finishedAt = scores[i] === null ? newest : Number(scores[i])));
    } else for (const k of fresh) k.finishedAt = now;
    this.trim();
  }

  /** Oldest first: by finish time, then seq. */
  private oldestFirst(): KeptJob[] {
    return [...this.jobs.values()].sort(
      (a, b) => a.finishedAt! - b.finishedAt! || Number(a.seq) - Number(b.seq),
    );
  }

  private trim(): void {
    const all = this.oldestFirst();
    for (const k of all.slice(0, Math.max(0, all.length - MODEL_QUEUE.keepCompleted.count))) {
      this.jobs.delete(k.seq);
      if (k.cid !== undefined && this.cids.get(k.cid) === k.seq) this.cids.delete(k.cid);
    }
  }

  /** getJobs('completed') order. */
  newestFirst(): KeptJob[] {
    return this.oldestFirst().reverse();
  }

  /** The kept job a public id names (a caller id, or the seq of one without). */
  byPublicId(id: string): KeptJob | undefined {
    const seq = this.cids.get(id);
    if (seq !== undefined) return this.jobs.get(seq);
    const k = this.jobs.get(id);
    return k && k.cid === undefined ? k : undefined;
  }
}
