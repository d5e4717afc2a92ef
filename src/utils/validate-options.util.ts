// Validation of the module's options (forRoot, registerQueue, @Processor): every problem found,
// one string each (the texts are in work-queue.messages.ts).
import {
  queueOptionProblems,
  shownMasked,
  workerOptionProblems,
  type WorkQueueOptions,
} from '../../lib/internal.js';
import {
  checkName,
  QUEUE_OPTION_KEYS,
  resolveQueueOptions,
  timerProblem,
  type ResolvedQueueOptions,
} from '../../lib/internal.js';
import type { ProcessorOptions } from '../interfaces/processor-options.interface.js';
import { processorSandboxProblems } from '../sandbox/sandbox-options.js';
import type {
  WorkQueueModuleOptions,
  WorkQueueQueueDefaults,
  WorkQueueWorkerDefaults,
} from '../interfaces/work-queue-module-options.interface.js';
import * as msg from '../work-queue.messages.js';
import { scheduleProblems } from './validate-schedules.util.js';
import { connectionProblems } from './validate-connection.util.js';
import { isObject, unknownKeys, type Bag } from './validate-bag.util.js';

// Records (not arrays) so that the compiler notices an option added to the interfaces.
// (The queue options but the module-wide prefix and logger: one list, lib's.)
const QUEUE_DEFAULT_KEYS = Object.fromEntries(
  Object.keys(QUEUE_OPTION_KEYS)
    .filter((k) => k !== 'prefix' && k !== 'logger')
    .map((k) => [k, true]),
) as Record<keyof WorkQueueQueueDefaults, true>;
const WORKER_DEFAULT_KEYS: Record<keyof WorkQueueWorkerDefaults, true> = {
  concurrency: true,
  jobTimeoutMs: true,
  idleTimeoutMs: true,
  heartbeatIntervalMs: true,
  prefetch: true,
};
const PROCESSOR_KEYS: Record<keyof ProcessorOptions, true> = {
  ...WORKER_DEFAULT_KEYS,
  leaseMs: true,
  backoffStrategy: true,
  name: true,
  sandbox: true,
};
const MODULE_KEYS: Record<keyof WorkQueueModuleOptions, true> = {
  connection: true,
  connections: true,
  prefix: true,
  defaults: true,
  logger: true,
  shutdownTimeoutMs: true,
  cleaner: true,
  workers: true,
};
const CONFIG_KEY = /^[A-Za-z0-9._:-]{1,100}$/;

function pick(o: Bag, keys: Record<string, true>): Bag {
  const out: Bag = {};
  for (const k of Object.keys(keys)) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function loggerProblems(l: unknown, path: string, problems: string[]): void {
  if (l === undefined || l === false) return;
  const ok =
    isObject(l) &&
    typeof l.log === 'function' &&
    typeof l.warn === 'function' &&
    typeof l.error === 'function';
  if (!ok) problems.push(msg.badLogger(path));
}

/** Every problem with the options of `WorkQueueModule.forRoot()`, one string each. */
export function moduleOptionProblems(options: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(options)) {
    // BullMQ's forRoot(configKey, options): a named connection is connections: { [key] } here.
    // (Not for a URL: its password would be shown.)
    const named =
      typeof options === 'string' && !options.includes('//') ? msg.namedForRoot(options) : '';
    return [msg.optionsNotObject(shownMasked(options)) + named];
  }
  unknownKeys(options, MODULE_KEYS, '', problems);
  connectionProblems(options.connection, problems);
  const named = options.connections;
  if (named !== undefined) {
    if (!isObject(named)) {
      problems.push(msg.badConnections(shownMasked(named)));
    } else {
      for (const [key, c] of Object.entries(named)) {
        if (!CONFIG_KEY.test(key)) problems.push(msg.badConnectionName(key));
        connectionProblems(c, problems, `connections.${key}`);
      }
    }
  }
  if (options.prefix !== undefined) {
    problems.push(...queueOptionProblems({ prefix: options.prefix as string }));
  }
  const d = options.defaults;
  if (d !== undefined) {
    if (!isObject(d)) {
      problems.push(msg.defaultsNotObject(msg.show(d)));
    } else {
      unknownKeys(d, { ...QUEUE_DEFAULT_KEYS, ...WORKER_DEFAULT_KEYS }, 'defaults.', problems, {
        prefix: msg.DEFAULTS_PREFIX,
        logger: msg.DEFAULTS_LOGGER,
      });
      problems.push(...queueOptionProblems(pick(d, QUEUE_DEFAULT_KEYS), 'defaults.'));
      problems.push(...workerOptionProblems(pick(d, WORKER_DEFAULT_KEYS), 'defaults.'));
    }
  }
  loggerProblems(options.logger, 'logger', problems);
  const t = options.shutdownTimeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 0)) {
    problems.push(msg.badShutdownTimeout(msg.show(t)));
  } else {
    const over = timerProblem('shutdownTimeoutMs', t);
    if (over) problems.push(over);
  }
  const c = options.cleaner;
  if (c !== undefined && c !== false) {
    if (!isObject(c)) {
      problems.push(msg.badCleaner(msg.show(c)));
    } else {
      unknownKeys(c, { intervalMs: true }, 'cleaner.', problems);
      const i = c.intervalMs;
      if (i !== undefined && (typeof i !== 'number' || !Number.isInteger(i) || i <= 0)) {
        problems.push(msg.badCleanerInterval(msg.show(i)));
      } else {
        const over = timerProblem('cleaner.intervalMs', i);
        if (over) problems.push(over);
      }
    }
  }
  const w = options.workers;
  if (w !== undefined && typeof w !== 'boolean') {
    if (!Array.isArray(w) || w.some((name) => typeof name !== 'string')) {
      problems.push(msg.badWorkers(msg.show(w)));
    }
  }
  return problems;
}

/**
 * The queues named by `forRoot({ workers: [...] })` that no `registerQueue()` registered, as a
 * problem (checked once every queue is registered, at bootstrap).
 */
export function workerQueueProblems(
  workers: boolean | readonly string[],
  registered: readonly string[],
): string[] {
  if (typeof workers === 'boolean') return [];
  const unknown = workers.filter((name) => !registered.includes(name));
  return unknown.length > 0 ? [msg.unknownWorkerQueues(unknown, registered)] : [];
}

/**
 * Every problem with one `registerQueue()` entry (name, overrides, schedules); `base` is what the
 * module gives every queue (prefix, defaults), which the schedules are checked against.
 */
export function registerQueueProblems(
  registration: unknown,
  base: WorkQueueOptions = {},
): string[] {
  const problems: string[] = [];
  if (!isObject(registration)) {
    return [msg.registrationNotObject(msg.show(registration))];
  }
  checkName('name', registration.name, problems);
  unknownKeys(
    registration,
    {
      ...QUEUE_DEFAULT_KEYS,
      name: true,
      prefix: true,
      configKey: true,
      connection: true,
      schedules: true,
      pruneSchedules: true,
      workers: true,
    },
    '',
    problems,
    { logger: msg.QUEUE_LOGGER },
  );
  const { name, configKey, connection, schedules, pruneSchedules, workers, ...rest } = registration;
  if (workers !== undefined && typeof workers !== 'boolean') {
    problems.push(msg.badQueueWorkers(msg.show(workers)));
  }
  if (configKey !== undefined) {
    if (typeof configKey !== 'string' || !CONFIG_KEY.test(configKey)) {
      problems.push(msg.badConfigKey(msg.show(configKey)));
    }
    if (connection !== undefined) {
      problems.push(msg.CONFIG_KEY_AND_CONNECTION);
    }
  }
  if (connection !== undefined) connectionProblems(connection, problems);
  problems.push(...queueOptionProblems(rest));
  // The queue's options as its schedules meet them (codec, payload size); the defaults when those
  // are invalid (already listed above).
  let options: ResolvedQueueOptions;
  try {
    options = resolveQueueOptions(String(name), { ...base, ...rest, logger: false });
  } catch {
    options = resolveQueueOptions('queue', { logger: false });
  }
  problems.push(...scheduleProblems(schedules, pruneSchedules, options));
  return problems;
}

/** Every problem with the options of one `@Processor()`; `at` names it. */
export function processorOptionProblems(options: unknown, at: string): string[] {
  if (!isObject(options)) return [msg.processorOptionsNotObject(at, msg.show(options))];
  const problems: string[] = [];
  unknownKeys(options, PROCESSOR_KEYS, at, problems, {
    autostart: msg.processorAutostart(at),
    closeTimeoutMs: msg.processorCloseTimeout(at),
  });
  problems.push(...workerOptionProblems(options, at));
  if (options.sandbox !== undefined)
    problems.push(...processorSandboxProblems(options.sandbox, at));
  return problems;
}

/** The worker options among `defaults`. */
export function workerDefaultsOf(defaults: Bag | undefined): WorkQueueWorkerDefaults {
  return defaults ? (pick(defaults, WORKER_DEFAULT_KEYS) as WorkQueueWorkerDefaults) : {};
}

/** The queue options among `defaults`. */
export function queueDefaultsOf(defaults: Bag | undefined): WorkQueueQueueDefaults {
  return defaults ? (pick(defaults, QUEUE_DEFAULT_KEYS) as WorkQueueQueueDefaults) : {};
}
