// The messages between a sandbox pool (the worker's side) and a sandbox (child.ts), and how a
// thrown value crosses between them. Messages cross by structured clone (postMessage of a
// thread; a forked process's JSON channel carries a clone's bytes where JSON would not give the
// same values: wire.ts): both refuse the same values.
import { NonRetryableError, RateLimitError, WorkQueueError } from '../errors.js';
import type { WorkQueueErrorCode } from '../errors.js';
import type { Job } from '../types/job.js';
import { printable } from '../util/checks.js';

/** A job's fields as a sandbox receives them (its methods are named in the run message). */
export interface JobFields {
  readonly id: string;
  readonly data: unknown;
  readonly name: string | undefined;
  readonly priority: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  readonly traceContext: string | undefined;
  readonly addedAt: number;
  readonly startedAt: number;
  readonly group: string | undefined;
  readonly parent: Job['parent'];
  /** The data was a Buffer (a thread receives it as a Uint8Array: made a Buffer again). */
  readonly bytes?: true;
}

/** An error as it crosses: its class name, message, stack and own fields (`code`, `delayMs`…). */
export interface ErrorShape {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  readonly fields: Record<string, unknown>;
  readonly cause?: Thrown;
  /** An AggregateError's errors. */
  readonly errors?: readonly Thrown[];
}

/** Anything thrown: an error, or any other value (thrown as it is on the other side). */
export type Thrown = { readonly error: ErrorShape } | { readonly value: unknown };

/** Pool → sandbox. */
export type ToSandbox =
  | { t: 'init'; file: string; setupData: unknown }
  | { t: 'run'; run: number; job: JobFields; methods: readonly string[] }
  | { t: 'abort'; run: number; reason: Thrown }
  | { t: 'reply'; call: number; ok: true; value: unknown }
  | { t: 'reply'; call: number; ok: false; error: Thrown }
  | { t: 'close' };

/** Sandbox → pool. */
export type FromSandbox =
  | { t: 'ready' }
  | { t: 'refused'; problems: string[] }
  | { t: 'call'; run: number; call: number; method: string; args: unknown[] }
  | { t: 'done'; run: number; ok: true; value: unknown }
  | { t: 'done'; run: number; ok: false; error: Thrown };

/** Own properties every error has, sent apart from its fields. */
const NOT_FIELDS = new Set(['name', 'message', 'stack', 'cause', 'errors']);

/** Whether `v` survives structured clone (tried: the rules are long and per type). */
function cloneable(v: unknown): boolean {
  if (v === null || (typeof v !== 'object' && typeof v !== 'function'))
    return typeof v !== 'symbol';
  try {
    structuredClone(v);
    return true;
  } catch {
    return false;
  }
}

/** An error's stack (V8 makes it on first read from its message: a message without a string form throws). */
function stackOf(err: Error): string | undefined {
  try {
    return typeof err.stack === 'string' ? err.stack : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A thrown value in a form that crosses: an error's fields that do not clone are left out. Never
 * throws: a value it cannot read (a proxy whose traps throw, a getter that throws) crosses as
 * its text (printable).
 */
export function toThrown(e: unknown, depth = 0): Thrown {
  try {
    return thrownOf(e, depth);
  } catch {
    return { value: printable(e) };
  }
}

function thrownOf(e: unknown, depth: number): Thrown {
  if (!(e instanceof Error) && !(typeof e === 'object' && e !== null && 'message' in e)) {
    return { value: cloneable(e) ? e : printable(e) };
  }
  const err = e as Error & Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(err)) {
    if (!NOT_FIELDS.has(key) && cloneable(err[key])) fields[key] = err[key];
  }
  const shape: ErrorShape = {
    name: typeof err.name === 'string' ? err.name : 'Error',
    message: typeof err.message === 'string' ? err.message : printable(err.message),
    stack: stackOf(err),
    fields,
    ...(err.cause !== undefined && depth < 3 ? { cause: toThrown(err.cause, depth + 1) } : {}),
    // (An AggregateError's `errors`, not enumerable: the errors it gathers.)
    ...(Array.isArray(err.errors) && depth < 3
      ? { errors: err.errors.map((x: unknown) => toThrown(x, depth + 1)) }
      : {}),
  };
  return { error: shape };
}

/**
 * The core's error classes, rebuilt by name so that the worker treats them as it would treat
 * them thrown in-process (a class added later is one more line here).
 */
const REBUILD: Record<string, (e: ErrorShape) => Error> = {
  NonRetryableError: (e) => new NonRetryableError(e.message),
  RateLimitError: (e) => new RateLimitError(Number(e.fields.delayMs), e.message),
  WorkQueueError: (e) =>
    new WorkQueueError(
      e.fields.code as WorkQueueErrorCode,
      e.message,
      Array.isArray(e.fields.problems) ? (e.fields.problems as string[]) : [],
    ),
};

/** The thrown value again: the core's errors as their classes, others as an Error of their name. */
export function fromThrown(t: Thrown): unknown {
  if (!('error' in t)) return t.value;
  const e = t.error;
  const rebuild = REBUILD[e.name];
  const err: Error = rebuild ? rebuild(e) : new Error(e.message);
  if (!rebuild)
    Object.defineProperty(err, 'name', { value: e.name, configurable: true, writable: true });
  const own = err as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(e.fields)) if (!(k in own) || !rebuild) own[k] = v;
  if (e.stack !== undefined) err.stack = e.stack;
  if (e.cause)
    Object.defineProperty(err, 'cause', {
      value: fromThrown(e.cause),
      configurable: true,
      writable: true,
    });
  if (e.errors)
    Object.defineProperty(err, 'errors', {
      value: e.errors.map(fromThrown),
      configurable: true,
      writable: true,
    });
  return err;
}
