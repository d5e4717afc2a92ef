/**
 * The public views of stored jobs (getJob, getJobs, listDead): a script's reply for one job
 * (lib/scripts/get_job.lua, list_jobs.lua, dead_letters.lua) as a `JobInfo` or `DeadJob`.
 */
import { errorMessage } from '../errors.js';
import type { DeadJob, JobInfo } from '../types/job.js';
import { decode, parseJson } from './codec.js';
import { num, parentOf, parseMeta, str, type Raw, type RecordContext } from './records.js';

/** One job of a script's reply, as get_job.lua and list_jobs.lua return it. */
export interface StoredJob {
  /** Its public id. */
  id: string;
  state: JobInfo['state'];
  raw: Raw;
  rawMeta: string;
  /** Due time / deadline / death or completion time ('' for pending). */
  score: Raw | number;
  /** Its progress ('' = none). */
  prog: Raw | number;
  added: Raw | number;
  started: Raw | number;
  /** leased: '<token>:<worker id>'; completed: '<worker id>/<token>:<attempts made>[:<result>]'. */
  holder: Raw | number;
}

/** A Redis time from a reply, or undefined when not known (0 or ''). */
const time = (v: Raw | number): number | undefined => {
  const n = num(v);
  return n > 0 ? n : undefined;
};

/** Set `info[key]` unless `value` is undefined (optional fields stay absent, not undefined). */
function put<O extends object, K extends keyof O>(info: O, key: K, value: O[K] | undefined): void {
  if (value !== undefined) info[key] = value;
}

/** The public view of a stored job. */
export function jobView<T, R>(ctx: RecordContext, j: StoredJob): JobInfo<T, R> {
  const meta = parseMeta(j.rawMeta);
  const info: JobInfo<T, R> = {
    id: j.id,
    state: j.state,
    name: meta.n,
    priority: meta.p ?? 5,
    attemptsMade: meta.a ?? 0,
    leaseExpiries: meta.x ?? 0,
  };
  if (meta.g !== undefined) info.group = meta.g;
  if (meta.e !== undefined) info.lastError = meta.e;
  if (meta.r !== undefined) info.deadReason = meta.r;
  const parent = parentOf(meta);
  if (parent) info.parent = parent;
  if (str(j.score) !== '') info.at = num(j.score);
  if (str(j.prog) !== '') {
    try {
      info.progress = JSON.parse(str(j.prog)) as unknown;
    } catch {
      info.progress = str(j.prog); // written by hand, not JSON: shown as stored
    }
  }
  put(info, 'addedAt', time(j.added));
  put(info, 'startedAt', time(j.started));
  put(info, 'processedBy', meta.k);
  const holder = str(j.holder);
  // A hand-off not adopted yet ('<token>:h') has no worker yet.
  if (j.state === 'leased' && holder !== '' && !holder.endsWith(':h'))
    info.processedBy = holder.slice(holder.indexOf(':') + 1);
  if (j.state === 'dead' || j.state === 'completed') put(info, 'finishedAt', info.at);
  if (j.state === 'completed' && holder !== '') {
    // '<worker id>/<lease token>:<attempts made>[:<result>]' (before 2026-12-06 without the token)
    const [worker = '', attempts = '', ...rest] = holder.split(':');
    info.processedBy = worker.split('/')[0]!;
    info.attemptsMade = Number(attempts) || (meta.a ?? 0) + 1;
    if (rest.length > 0) {
      try {
        info.result = parseJson<R>(rest.join(':'), 'result');
      } catch (e) {
        info.decodeError = errorMessage(e);
      }
    }
  }
  try {
    info.data = decode<T>(ctx.options, j.raw);
  } catch (e) {
    info.decodeError = errorMessage(e);
  }
  return info;
}

/** A dead-lettered job as dead_letters.lua lists it (seq, payload, meta, died, added, started). */
export function deadView<T>(
  ctx: RecordContext,
  seq: string,
  raw: Raw,
  rawMeta: string,
  died: Raw | number,
  added: Raw | number,
  started: Raw | number,
): DeadJob<T> {
  const meta = parseMeta(rawMeta);
  const job: DeadJob<T> = {
    id: meta.i ?? seq,
    name: meta.n,
    reason: meta.r ?? '',
    lastError: meta.e,
    attemptsMade: meta.a ?? 0,
    diedAt: num(died),
    finishedAt: num(died),
  };
  if (meta.g !== undefined) job.group = meta.g;
  put(job, 'addedAt', time(added));
  put(job, 'startedAt', time(started));
  put(job, 'processedBy', meta.k);
  try {
    job.data = decode<T>(ctx.options, raw);
  } catch (e) {
    job.decodeError = errorMessage(e);
  }
  return job;
}
