import { queueOptionProblems, workerOptionProblems } from '../../lib/index.js';
export { invalidOptions } from '../../lib/errors.js';
import { checkName } from '../../lib/options.js';
import type { ProcessorOptions } from '../interfaces/processor-options.interface.js';
import type {
  WorkQueueModuleOptions,
  WorkQueueQueueDefaults,
  WorkQueueWorkerDefaults,
} from '../interfaces/work-queue-module-options.interface.js';

// Records (not arrays) so that the compiler notices an option added to the interfaces.
const QUEUE_DEFAULT_KEYS: Record<keyof WorkQueueQueueDefaults, true> = {
  codec: true,
  maxPayloadBytes: true,
  leaseMs: true,
  maxAttempts: true,
  backoff: true,
  maxLeaseExpiries: true,
  maxDead: true,
  storeResults: true,
  heartbeatTimeoutMs: true,
  replicaAcks: true,
  replicaAckTimeoutMs: true,
  commandTimeoutMs: true,
  dedupeWindowMs: true,
};
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
};
const MODULE_KEYS: Record<keyof WorkQueueModuleOptions, true> = {
  connection: true,
  connections: true,
  prefix: true,
  defaults: true,
  logger: true,
  shutdownTimeoutMs: true,
  cleaner: true,
};
const CONNECTION_KINDS = ['url', 'redis', 'client', 'cluster'] as const;
const CONFIG_KEY = /^[A-Za-z0-9._:-]{1,100}$/;

type Bag = Record<string, unknown>;

const isObject = (v: unknown): v is Bag => typeof v === 'object' && v !== null && !Array.isArray(v);

const show = (v: unknown): string => {
  if (typeof v === 'function') return 'a function';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

function unknownKeys(
  o: Bag,
  known: Record<string, true>,
  path: string,
  problems: string[],
  hints: Record<string, string> = {},
): void {
  for (const k of Object.keys(o)) {
    if (known[k] || o[k] === undefined) continue;
    problems.push(hints[k] ?? `${path}${k} is not a known option`);
  }
}

function pick(o: Bag, keys: Record<string, true>): Bag {
  const out: Bag = {};
  for (const k of Object.keys(keys)) if (o[k] !== undefined) out[k] = o[k];
  return out;
}


function connectionProblems(c: unknown, problems: string[], path = 'connection'): void {
  const wanted = 'give exactly one of { url }, { redis }, { client } or { cluster }';
  if (c === undefined) {
    problems.push(`${path} is required: ${wanted}`);
    return;
  }
  if (!isObject(c)) {
    problems.push(`${path} must be an object: ${wanted}, got ${show(c)}`);
    return;
  }
  const given = CONNECTION_KINDS.filter((k) => c[k] !== undefined);
  unknownKeys(c, { url: true, redis: true, client: true, cluster: true }, `${path}.`, problems);
  if (given.length === 0) problems.push(`${path} is empty: ${wanted}`);
  if (given.length > 1) {
    problems.push(`${path} has ${given.join(' and ')}: ${wanted}`);
  }
  if (c.url !== undefined) {
    let ok = false;
    if (typeof c.url === 'string') {
      try {
        ok = ['redis:', 'rediss:'].includes(new URL(c.url).protocol);
      } catch {
        ok = false;
      }
    }
    if (!ok) {
      problems.push(
        `${path}.url must be a redis:// or rediss:// URL, got ${typeof c.url === 'string' ? JSON.stringify(redactUrl(c.url)) : show(c.url)}`,
      );
    }
  }
  if (c.redis !== undefined && !isObject(c.redis)) {
    problems.push(`${path}.redis must be an object of ioredis options, got ${show(c.redis)}`);
  }
  if (c.client !== undefined) {
    const cl = c.client as Bag | null;
    if (
      !isObject(cl) ||
      typeof cl.duplicate !== 'function' ||
      typeof cl.quit !== 'function' ||
      typeof cl.defineCommand !== 'function'
    ) {
      problems.push(`${path}.client must be an ioredis Redis or Cluster instance`);
    }
  }
  if (c.cluster !== undefined) {
    if (!isObject(c.cluster)) {
      problems.push(`${path}.cluster must be an object { nodes, options? }`);
    } else {
      const { nodes, options } = c.cluster;
      if (!Array.isArray(nodes) || nodes.length === 0) {
        problems.push(
          `${path}.cluster.nodes must be a non-empty array of nodes, got ${show(nodes)}`,
        );
      }
      if (options !== undefined && !isObject(options)) {
        problems.push(`${path}.cluster.options must be an object of ioredis Cluster options`);
      }
      unknownKeys(c.cluster, { nodes: true, options: true }, `${path}.cluster.`, problems);
    }
  }
}

function loggerProblems(l: unknown, path: string, problems: string[]): void {
  if (l === undefined || l === false) return;
  const ok =
    isObject(l) &&
    typeof l.log === 'function' &&
    typeof l.warn === 'function' &&
    typeof l.error === 'function';
  if (!ok) problems.push(`${path} must be false or a Nest LoggerService (log, warn, error)`);
}

/** Every problem with the options of `WorkQueueModule.forRoot()`, one string each. */
export function moduleOptionProblems(options: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(options)) {
    return [`options must be an object with at least { connection }, got ${show(options)}`];
  }
  unknownKeys(options, MODULE_KEYS, '', problems);
  connectionProblems(options.connection, problems);
  const named = options.connections;
  if (named !== undefined) {
    if (!isObject(named)) {
      problems.push(
        `connections must be an object of named connections { [configKey]: connection }, got ${show(named)}`,
      );
    } else {
      for (const [key, c] of Object.entries(named)) {
        if (!CONFIG_KEY.test(key)) {
          problems.push(
            `connections: ${JSON.stringify(key)} is not a valid configKey (1-100 letters, digits, '.', '_', '-' or ':')`,
          );
        }
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
      problems.push(`defaults must be an object, got ${show(d)}`);
    } else {
      unknownKeys(d, { ...QUEUE_DEFAULT_KEYS, ...WORKER_DEFAULT_KEYS }, 'defaults.', problems, {
        prefix: 'defaults.prefix is not allowed: set prefix at the top level of the options',
        logger: 'defaults.logger is not allowed: set logger at the top level of the options',
      });
      problems.push(...queueOptionProblems(pick(d, QUEUE_DEFAULT_KEYS), 'defaults.'));
      problems.push(...workerOptionProblems(pick(d, WORKER_DEFAULT_KEYS), 'defaults.'));
    }
  }
  loggerProblems(options.logger, 'logger', problems);
  const t = options.shutdownTimeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 0)) {
    problems.push(`shutdownTimeoutMs must be an integer >= 0, got ${show(t)}`);
  }
  const c = options.cleaner;
  if (c !== undefined && c !== false) {
    if (!isObject(c)) {
      problems.push(`cleaner must be false or { intervalMs? }, got ${show(c)}`);
    } else {
      unknownKeys(c, { intervalMs: true }, 'cleaner.', problems);
      const i = c.intervalMs;
      if (i !== undefined && (typeof i !== 'number' || !Number.isInteger(i) || i <= 0)) {
        problems.push(`cleaner.intervalMs must be a positive integer, got ${show(i)}`);
      }
    }
  }
  return problems;
}

/** Every problem with one `registerQueue()` entry (name and overrides). */
export function registerQueueProblems(registration: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(registration)) {
    return [
      `a queue registration must be an object { name, ...options }, got ${show(registration)}`,
    ];
  }
  checkName('name', registration.name, problems);
  unknownKeys(
    registration,
    { ...QUEUE_DEFAULT_KEYS, name: true, prefix: true, configKey: true, connection: true },
    '',
    problems,
    { logger: 'logger is not allowed per queue: set it in WorkQueueModule.forRoot()' },
  );
  const { name: _name, configKey, connection, ...rest } = registration;
  void _name;
  if (configKey !== undefined) {
    if (typeof configKey !== 'string' || !CONFIG_KEY.test(configKey)) {
      problems.push(
        `configKey must be the name of a connection in WorkQueueModule.forRoot({ connections }), got ${show(configKey)}`,
      );
    }
    if (connection !== undefined) {
      problems.push('give configKey (a named connection) or connection (its own), not both');
    }
  }
  if (connection !== undefined) connectionProblems(connection, problems);
  problems.push(...queueOptionProblems(rest));
  return problems;
}

/** Every problem with the options of one `@Processor()`; `at` names it. */
export function processorOptionProblems(options: unknown, at: string): string[] {
  if (!isObject(options)) return [`${at}options must be an object, got ${show(options)}`];
  const problems: string[] = [];
  unknownKeys(options, PROCESSOR_KEYS, at, problems, {
    autostart: `${at}autostart is not allowed: the module starts workers at application bootstrap`,
    closeTimeoutMs: `${at}closeTimeoutMs is not allowed: set shutdownTimeoutMs in WorkQueueModule.forRoot()`,
  });
  problems.push(...workerOptionProblems(options, at));
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

/** The URL with its password (if any) masked, for error messages that get logged. */
function redactUrl(url: string): string {
  return url.replace(/^([^/]*\/\/[^/@:]*:)[^@/]*@/, '$1***@');
}
