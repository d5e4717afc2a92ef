// What of a job crosses into a sandbox: its fields, and the names of its methods (each becomes a
// call back to the worker's job, so a method the Job gains needs no change here).
import type { Job } from '../types/job.js';
import type { JobFields } from './protocol.js';

/**
 * Not calls back to the worker's job: implemented in the sandbox itself (rateLimited must throw
 * there, at once), or not a method of the job (its JSON form: the sandbox's job is plain data).
 */
const LOCAL = new Set(['constructor', 'rateLimited', 'toJSON']);

export function jobFields(job: Job): JobFields {
  const data = job.data;
  return {
    id: job.id,
    data,
    name: job.name,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    queueName: job.queueName,
    traceContext: job.traceContext,
    addedAt: job.addedAt,
    startedAt: job.startedAt,
    group: job.group,
    parent: job.parent,
    ...(Buffer.isBuffer(data) ? { bytes: true } : {}),
  };
}

/** The method names a prototype chain gives its jobs (see jobMethods), found on its first job. */
const inherited = new WeakMap<object, readonly string[]>();

/** The function-valued properties of `o` (own, with getters read on `job`), not in `skip`. */
function functionsOf(o: object, job: Job, skip: ReadonlySet<string>): string[] {
  const names: string[] = [];
  for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(o))) {
    if (LOCAL.has(name) || skip.has(name)) continue;
    const v = d.get ? (job as unknown as Record<string, unknown>)[name] : d.value;
    if (typeof v === 'function') names.push(name);
  }
  return names;
}

/**
 * The names of `job`'s methods, own or inherited: functions held as values, and getters that give
 * a function (the worker's job makes its methods on first read: lib/worker/job.ts). Those of its
 * prototypes are looked at on the first job of a prototype only: reading a getter makes what it
 * gives (a method's closure, the job's AbortController), ~20 µs a job for every getter.
 */
export function jobMethods(job: Job): string[] {
  const proto = Object.getPrototypeOf(job) as object | null;
  if (proto === null || proto === Object.prototype) return functionsOf(job, job, LOCAL);
  let names = inherited.get(proto);
  if (names === undefined) {
    // (First: a getter read here may make an own property of the job, looked at below.)
    const found = new Set<string>();
    for (let o: object | null = proto; o && o !== Object.prototype; o = Object.getPrototypeOf(o))
      for (const name of functionsOf(o, job, found)) found.add(name);
    names = [...found];
    inherited.set(proto, names);
  }
  const own = functionsOf(job, job, LOCAL);
  // (An own property of that name is the job's, function or not: looked at above.)
  for (const name of names) if (!Object.prototype.hasOwnProperty.call(job, name)) own.push(name);
  return own;
}
