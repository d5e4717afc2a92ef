// The sandbox form of a Worker's handler: its checks (all at construction, every problem listed)
// and its resolved values. What each option means: lib/types/sandbox.ts.
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Job } from '../types/job.js';
import type { SandboxMode, SandboxOptions } from '../types/sandbox.js';
import { isPosInt, shown, timerProblem } from '../util/checks.js';

const MODES: readonly SandboxMode[] = ['thread', 'process'];
const KEYS: Record<keyof SandboxOptions, true> = {
  file: true,
  mode: true,
  poolSize: true,
  memoryLimitMb: true,
  execArgv: true,
  abortGraceMs: true,
  startTimeoutMs: true,
  setupData: true,
  wrapJob: true,
};

/**
 * How long a closing sandbox may take for its teardown before it is terminated (one whose job
 * was aborted by the close gets its abortGraceMs to end it first).
 */
export const SANDBOX_CLOSE_MS = 5_000;

/** Every option with its default applied. */
export interface SandboxSettings {
  /** The handler module, as a `file:` URL. */
  readonly file: string;
  readonly mode: SandboxMode;
  /** Sandboxes at most. */
  readonly size: number;
  readonly memoryLimitMb: number | undefined;
  readonly execArgv: string[] | undefined;
  readonly abortGraceMs: number;
  readonly startTimeoutMs: number;
  readonly setupData: unknown;
  readonly wrapJob: ((job: Job) => Job) | undefined;
}

/**
 * The sandbox's entry (child.ts beside this file, with this file's extension: `.ts` when run
 * from sources, `.js` or `.cjs` from the built package).
 */
export function sandboxEntry(): URL {
  const here = import.meta.url;
  return new URL(`./child${here.slice(here.lastIndexOf('.'))}`, here);
}

/** A `file` option as a URL, or the problem with it. */
function fileUrl(file: unknown): URL | string {
  if (file instanceof URL) return file.protocol === 'file:' ? file : 'must be a file: URL';
  if (typeof file !== 'string' || file === '')
    return `must be an absolute path or a file: URL, got ${shown(file)}`;
  if (file.startsWith('file:')) return new URL(file);
  return isAbsolute(file) ? pathToFileURL(file) : `must be absolute, got ${shown(file)}`;
}

/** Whether a file exists at `url`. */
function isFile(url: URL): boolean {
  try {
    return statSync(fileURLToPath(url)).isFile();
  } catch {
    return false;
  }
}

/** Problems of a Worker's handler argument: a function, or sandbox options. */
export function handlerProblems(handler: unknown): string[] {
  if (typeof handler === 'function') return [];
  if (typeof handler !== 'object' || handler === null || Array.isArray(handler))
    return [`handler must be a function or sandbox options { file, mode }, got ${shown(handler)}`];
  return sandboxOptionProblems(handler as SandboxOptions);
}

export function sandboxOptionProblems(o: SandboxOptions, path = 'sandbox.'): string[] {
  const problems: string[] = [];
  for (const k of Object.keys(o)) {
    if (KEYS[k as keyof SandboxOptions]) continue;
    const hint =
      k === 'useWorkerThreads' ? ` (BullMQ's useWorkerThreads is mode: 'thread' here)` : '';
    problems.push(`${path}${k} is not a known option${hint}`);
  }
  const url = fileUrl(o.file);
  if (typeof url === 'string') problems.push(`${path}file ${url}`);
  else if (!isFile(url)) problems.push(`${path}file does not exist: ${fileURLToPath(url)}`);
  if (!MODES.includes(o.mode))
    problems.push(`${path}mode must be 'thread' or 'process', got ${shown(o.mode)}`);
  for (const k of ['poolSize', 'memoryLimitMb'] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v <= 0))
      problems.push(`${path}${k} must be a positive integer, got ${shown(v)}`);
  }
  const grace = o.abortGraceMs;
  if (grace !== undefined && (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0))
    problems.push(`${path}abortGraceMs must be an integer >= 0, got ${shown(grace)}`);
  const start = o.startTimeoutMs;
  if (start !== undefined && !isPosInt(start))
    problems.push(`${path}startTimeoutMs must be a positive integer (ms), got ${shown(start)}`);
  for (const [k, v] of [
    ['startTimeoutMs', start],
    ['abortGraceMs', grace],
  ] as const) {
    const timer = timerProblem(`${path}${k}`, v);
    if (timer) problems.push(timer);
  }
  const argv = o.execArgv as unknown;
  if (argv !== undefined && (!Array.isArray(argv) || argv.some((a) => typeof a !== 'string')))
    problems.push(`${path}execArgv must be an array of strings, got ${shown(argv)}`);
  if (o.wrapJob !== undefined && typeof o.wrapJob !== 'function')
    problems.push(`${path}wrapJob must be a function`);
  if (!isFile(sandboxEntry()))
    problems.push(
      `the sandbox entry ${fileURLToPath(sandboxEntry())} is missing (a bundled app must keep nestjs-work-queue external)`,
    );
  return problems;
}

/** Options checked by `sandboxOptionProblems`, with defaults filled in. */
export function resolveSandboxOptions(o: SandboxOptions, concurrency: number): SandboxSettings {
  return {
    file: (fileUrl(o.file) as URL).href,
    mode: o.mode,
    size: o.poolSize ?? Math.max(1, Math.min(concurrency, availableParallelism())),
    memoryLimitMb: o.memoryLimitMb,
    execArgv: o.execArgv ? [...o.execArgv] : undefined,
    abortGraceMs: o.abortGraceMs ?? 1_000,
    startTimeoutMs: o.startTimeoutMs ?? 30_000,
    setupData: o.setupData,
    wrapJob: o.wrapJob,
  };
}
