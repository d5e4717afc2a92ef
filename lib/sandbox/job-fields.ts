// What of a job crosses into a sandbox: its fields, and the names of its methods (each becomes a
// call back to the worker's job, so a method the Job gains needs no change here).
import type { Job } from '../types/job.js';
import type { JobFields } from './protocol.js';

/** Implemented in the sandbox itself (it must throw there, at once). */
const LOCAL = new Set(['constructor', 'rateLimited']);

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
    ...(Buffer.isBuffer(data) ? { bytes: true } : {}),
  };
}

/**
 * The names of `job`'s methods, own or inherited: functions held as values, and getters that give
 * a function (the worker's job makes its methods on first read: lib/worker/job.ts).
 */
export function jobMethods(job: Job): string[] {
  const names = new Set<string>();
  for (let o: object | null = job; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(o))) {
      if (LOCAL.has(name) || names.has(name)) continue;
      const v = d.get ? (job as unknown as Record<string, unknown>)[name] : d.value;
      if (typeof v === 'function') names.add(name);
    }
  }
  return [...names];
}
