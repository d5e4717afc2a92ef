// The code a sandbox runs: a worker thread or a forked process, started by sandbox.ts with this
// file as its entry. It loads the handler module (its `setup` once), then runs one job at a time
// for the pool: the job's methods are calls back to the worker's real job, its signal aborts
// when the pool says so, its outcome goes back as a 'done' message.
import { parentPort } from 'node:worker_threads';
import { errorMessage, rateLimited, WorkQueueError } from '../errors.js';
import {
  fromThrown,
  toThrown,
  type FromSandbox,
  type JobFields,
  type ToSandbox,
} from './protocol.js';
import { fromWire, toWire } from './wire.js';

type Handler = (job: object) => unknown;
type Hook = (arg?: unknown) => unknown;

/** How the pool is reached: the thread's port, or the process's IPC channel. */
const send: (m: FromSandbox) => void = parentPort
  ? (m) => parentPort!.postMessage(m)
  : (m) => {
      process.send!(toWire(m));
    };

let handler: Handler | undefined;
let teardown: Hook | undefined;
/** The module's load and setup (never rejects: init reports its problems). */
let started: Promise<void> | undefined;
/** Running jobs' abort controllers, by run number. */
const runs = new Map<number, AbortController>();
/** Calls of job methods waiting for the worker's reply, by call number. */
const calls = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextCall = 0;
let closing = false;

/** `f` of the module, or of its default export when that is a CommonJS `exports` object. */
function exported(mod: Record<string, unknown>, name: string): unknown {
  if (name in mod && (name !== 'default' || typeof mod.default === 'function')) return mod[name];
  const inner = mod.default as Record<string, unknown> | undefined;
  return typeof inner === 'object' && inner !== null ? inner[name] : undefined;
}

async function init(file: string, setupData: unknown): Promise<void> {
  const problems: string[] = [];
  let step = 'could not be loaded';
  try {
    const mod = (await import(file)) as Record<string, unknown>;
    const main = exported(mod, 'default');
    const setup = exported(mod, 'setup');
    const down = exported(mod, 'teardown');
    if (typeof main !== 'function') {
      problems.push(`${file} has no default export function (the handler)`);
    } else handler = main as Handler;
    if (typeof down === 'function') teardown = down as Hook;
    step = 'setup failed';
    if (problems.length === 0 && typeof setup === 'function') await (setup as Hook)(setupData);
  } catch (e) {
    // A setup may list its problems itself (an INVALID_* WorkQueueError's `problems`).
    const listed =
      e instanceof WorkQueueError && e.code.startsWith('INVALID_') && e.problems.length > 0;
    if (listed) problems.push(...e.problems);
    else problems.push(`${file} ${step}: ${errorMessage(e)}`);
  }
  send(problems.length > 0 ? { t: 'refused', problems } : { t: 'ready' });
}

/** A job method of the worker's job, called across the boundary (its result comes back). */
function remote(run: number, method: string) {
  return (...args: unknown[]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = ++nextCall;
      calls.set(call, { resolve, reject });
      try {
        send({ t: 'call', run, call, method, args });
      } catch (e) {
        calls.delete(call);
        reject(
          new WorkQueueError(
            'ENCODE_FAILED',
            `job.${method}(): its arguments cannot cross the sandbox boundary (structured clone): ${errorMessage(e)}`,
          ),
        );
      }
    });
}

function run(m: Extract<ToSandbox, { t: 'run' }>): void {
  const controller = new AbortController();
  runs.set(m.run, controller);
  const f = m.job;
  const u8 = f.data as Uint8Array;
  const data =
    f.bytes && !Buffer.isBuffer(u8) ? Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength) : u8;
  // Each field named (a process's JSON message leaves out those that are undefined).
  const job: Omit<JobFields, 'bytes'> & Record<string, unknown> = {
    id: f.id,
    data,
    name: f.name,
    priority: f.priority,
    attempt: f.attempt,
    maxAttempts: f.maxAttempts,
    queueName: f.queueName,
    traceContext: f.traceContext,
    addedAt: f.addedAt,
    startedAt: f.startedAt,
    group: f.group,
    parent: f.parent,
    signal: controller.signal,
    rateLimited,
  };
  for (const method of m.methods) job[method] = remote(m.run, method);
  // As the worker's job: once updated, `job.data` is the new data.
  const update = job.updateData as ((data: unknown) => Promise<unknown>) | undefined;
  if (update)
    job.updateData = async (next: unknown) => {
      const ok = await update(next);
      if (ok === true) (job as { data: unknown }).data = next;
      return ok;
    };
  let out: unknown;
  try {
    out = handler!(job);
  } catch (e) {
    out = Promise.reject(e);
  }
  Promise.resolve(out)
    .then(
      (value) => {
        try {
          send({ t: 'done', run: m.run, ok: true, value });
        } catch (e) {
          const error = new WorkQueueError(
            'ENCODE_FAILED',
            `job ${m.job.id}: its result cannot cross the sandbox boundary (structured clone): ${errorMessage(e)}`,
          );
          send({ t: 'done', run: m.run, ok: false, error: toThrown(error) });
        }
      },
      (e: unknown) => send({ t: 'done', run: m.run, ok: false, error: toThrown(e) }),
    )
    .finally(() => {
      runs.delete(m.run);
      if (closing && runs.size === 0) void exit();
    });
}

/** Close: once no job runs, the module's teardown, then the sandbox ends. */
async function exit(): Promise<void> {
  try {
    await started; // a sandbox closed while its setup runs: teardown after it, not beside it
    await teardown?.();
  } catch (e) {
    console.error(`sandbox teardown failed: ${errorMessage(e)}`);
  }
  process.exit(0);
}

function onMessage(m: ToSandbox): void {
  switch (m.t) {
    case 'init':
      started = init(m.file, m.setupData);
      break;
    case 'run':
      run(m);
      break;
    case 'abort':
      // In a later turn: messages that arrive together are dispatched in one go, so a job-method
      // reply just before this abort has resolved its promise but its awaiting handler has not
      // resumed yet — aborting now would fire before that handler could listen to its signal
      // (in-process, the two come in separate socket reads, and the handler listens first).
      setImmediate(() => runs.get(m.run)?.abort(fromThrown(m.reason)));
      break;
    case 'reply': {
      const waiting = calls.get(m.call);
      calls.delete(m.call);
      if (m.ok) waiting?.resolve(m.value);
      else waiting?.reject(fromThrown(m.error));
      break;
    }
    case 'close':
      closing = true;
      if (runs.size === 0) void exit();
      break;
  }
}

if (parentPort) parentPort.on('message', onMessage);
else {
  process.on('message', (m) => onMessage(fromWire<ToSandbox>(m)));
  // The worker's process is gone (even SIGKILLed): no orphan sandbox stays behind (and while a
  // job blocks this event loop, the guard of spawn.ts kills this process).
  process.on('disconnect', () => process.exit(0));
}
