// The user-facing messages of the Nest module (errors, validation problems, log lines), as small
// functions: the place to read, reword or test what the module says — beside it, those of the
// event hooks (work-queue-events.messages.ts), of health (health/) and of sandboxes (sandbox/).
import { shown } from '../lib/internal.js';

/**
 * `'name'`, with single quotes escaped: how decorator arguments are quoted in messages (one that
 * is not a string: as `show` gives it).
 */
export const quote = (s: unknown): string =>
  typeof s === 'string' ? `'${s.replace(/'/g, "\\'")}'` : show(s);

// --- Options (WorkQueueContext, validate-options.util) ---

export const INVALID_MODULE_OPTIONS = 'invalid WorkQueueModule options';
export const invalidRegistration = (where: string) => `invalid options in ${where}`;
export const registerQueueWhere = (names: readonly unknown[], via = 'registerQueue') =>
  `WorkQueueModule.${via}(${names.map((n) => JSON.stringify(n)).join(', ')})`;
export const noCreateMethod = (cls: string) =>
  `forRootAsync({ useClass / useExisting: ${cls} }): ${cls} has no create() method returning the module's options (@nestjs/bullmq's createSharedConfiguration() is create() here)`;
export const noAsyncOptions = (got: string) =>
  `forRootAsync needs { useFactory } (a function, with inject), { useClass } or { useExisting }, got ${got}`;
export const factoryNotFunction = (got: string) =>
  `useFactory must be a function returning the queue's options, got ${got}`;
export const injectNotArray = (got: string) =>
  `inject must be an array of the tokens useFactory takes, got ${got}`;
export const factoryNotOptions = (got: string) =>
  `useFactory must return an object of queue options (or nothing), got ${got}`;
export const registeredTwice = (name: string) =>
  `queue "${name}" is registered twice with different options`;
export const registeredTwiceDetails = (first: string, then: string) => [
  `first: ${first}`,
  `then:  ${then}`,
  `register it once (e.g. in a shared module) or with the same options everywhere`,
];
export const unknownConfigKey = (configKey: string, keys: readonly string[]) => {
  const known = keys.map((k) => JSON.stringify(k)).join(', ');
  return `configKey ${JSON.stringify(configKey)} is not a connection of WorkQueueModule.forRoot({ connections }) (${known ? `known: ${known}` : 'it has none'})`;
};

/** BullMQ's options met in the module's (registerQueue, defaults, @Processor), and ours. */
const BULLMQ_HINTS: Readonly<Record<string, string>> = {
  defaultJobOptions: 'maxAttempts and backoff are queue options here, the rest per add',
  removeOnComplete: "BullMQ's removeOnComplete is the queue option keepCompleted here",
  removeOnFail: "BullMQ's removeOnFail is the queue option maxDead here",
  streams: "BullMQ's streams.events.maxLen is the queue option events: { maxLen } here",
  lockDuration: "BullMQ's lockDuration is leaseMs here",
  stalledInterval:
    "leases that lapse are taken back by the module's cleaner (forRoot({ cleaner }))",
  maxStalledCount: "BullMQ's maxStalledCount is the queue option maxLeaseExpiries here",
  limiter: "a rate limit is the queue's: registerQueue({ name, limiter: { max, durationMs } })",
  connection: "a processor uses its queue's connection (registerQueue, forRoot)",
  autorun: 'the module starts workers at application bootstrap',
  drainDelay: "BullMQ's drainDelay is idleTimeoutMs here",
  settings: "BullMQ's settings.backoffStrategy is backoffStrategy here",
  attempts: "BullMQ's attempts is the queue option maxAttempts here",
  delay: 'a delay is per add: add(data, { delayMs })',
};
export const unknownOption = (path: string, key: string) =>
  `${path}${key} is not a known option${BULLMQ_HINTS[key] ? ` (${BULLMQ_HINTS[key]})` : ''}`;
const ONE_CONNECTION =
  'give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }';
export const connectionRequired = (path: string) => `${path} is required: ${ONE_CONNECTION}`;
export const connectionNotObject = (path: string, got: string) =>
  `${path} must be an object: ${ONE_CONNECTION}, got ${got}`;
export const flowQueueElsewhere = (queue: string) =>
  `queue ${JSON.stringify(queue)} is registered on its own connection or prefix: a flow producer writes on the module's connection and prefix, and a child's parent must be on the same Redis and prefix (register the queue on the module's connection, or add to it with its own queue)`;
/** An ioredis option given at the connection's top level (BullMQ's `connection: { host, port }`). */
export const connectionFlatRedisOption = (path: string, key: string) =>
  `${path}.${key} is not a known option (ioredis options go in ${path}: { redis: { ${key}, … } }, or give ${path}: { url })`;
export const connectionEmpty = (path: string) => `${path} is empty: ${ONE_CONNECTION}`;
export const connectionKinds = (path: string, given: readonly string[]) =>
  `${path} has ${given.join(' and ')}: ${ONE_CONNECTION}`;
export const badUrl = (path: string, got: string) =>
  `${path}.url must be a redis:// or rediss:// URL, got ${got}`;
export const badRedisOptions = (path: string, got: string) =>
  `${path}.redis must be an object of ioredis options, got ${got}`;
export const badClient = (path: string) =>
  `${path}.client must be an ioredis Redis or Cluster instance`;
export const badCluster = (path: string) => `${path}.cluster must be an object { nodes, options? }`;
export const badClusterNodes = (path: string, got: string) =>
  `${path}.cluster.nodes must be a non-empty array of nodes, got ${got}`;
export const badClusterOptions = (path: string) =>
  `${path}.cluster.options must be an object of ioredis Cluster options`;
export const badSentinels = (path: string, got: string) =>
  `${path}.sentinels must be a non-empty array of the sentinels' addresses { host, port }, got ${got}`;
export const badSentinel = (path: string, i: number, got: string) =>
  `${path}.sentinels[${i}] must be { host?: string, port?: 1..65535 }, got ${got}`;
export const badSentinelName = (path: string, got: string) =>
  `${path}.name must be the master's name as the sentinels know it (sentinel monitor <name> …), got ${got}`;
export const badSentinelRole = (path: string, got: string) =>
  `${path}.role must be 'master' (queues write to the master), got ${got}`;
export const badLogger = (path: string) =>
  `${path} must be false or a Nest LoggerService (log, warn, error)`;
export const optionsNotObject = (got: string) =>
  `options must be an object with at least { connection }, got ${got}`;
export const namedForRoot = (key: string) =>
  ` (BullMQ's forRoot(configKey, options) is forRoot({ connection, connections: { ${JSON.stringify(key)}: … } }) here, and registerQueue({ name, configKey }))`;
export const badConnections = (got: string) =>
  `connections must be an object of named connections { [configKey]: connection }, got ${got}`;
export const badConnectionName = (key: string) =>
  `connections: ${JSON.stringify(key)} is not a valid configKey (1-100 letters, digits, '.', '_', '-' or ':')`;
export const defaultsNotObject = (got: string) => `defaults must be an object, got ${got}`;
export const DEFAULTS_PREFIX =
  'defaults.prefix is not allowed: set prefix at the top level of the options';
export const DEFAULTS_LOGGER =
  'defaults.logger is not allowed: set logger at the top level of the options';
export const badShutdownTimeout = (got: string) =>
  `shutdownTimeoutMs must be an integer >= 0, got ${got}`;
export const badCleaner = (got: string) => `cleaner must be false or { intervalMs? }, got ${got}`;
export const badCleanerInterval = (got: string) =>
  `cleaner.intervalMs must be a positive integer, got ${got}`;
export const registrationNotObject = (got: string) =>
  `a queue registration must be an object { name, ...options }, got ${got}`;
export const QUEUE_LOGGER = 'logger is not allowed per queue: set it in WorkQueueModule.forRoot()';
export const badConfigKey = (got: string) =>
  `configKey must be the name of a connection in WorkQueueModule.forRoot({ connections }), got ${got}`;
export const CONFIG_KEY_AND_CONNECTION =
  'give configKey (a named connection) or connection (its own), not both';
export const processorOptionsNotObject = (at: string, got: string) =>
  `${at}options must be an object, got ${got}`;
export const processorAutostart = (at: string) =>
  `${at}autostart is not allowed: the module starts workers at application bootstrap`;
export const badWorkers = (got: string) =>
  `workers must be true, false or an array of queue names, got ${got}`;
export const unknownWorkerQueues = (names: readonly string[], registered: readonly string[]) => {
  const known = registered.map((n) => JSON.stringify(n)).join(', ');
  return `workers names queues that are not registered: ${names.map((n) => JSON.stringify(n)).join(', ')} (${known ? `registered: ${known}` : 'no queue is registered'})`;
};
export const badQueueWorkers = (got: string) => `workers must be true or false, got ${got}`;
export const processorCloseTimeout = (at: string) =>
  `${at}closeTimeoutMs is not allowed: set shutdownTimeoutMs in WorkQueueModule.forRoot()`;

// --- Schedules (validate-schedules.util, WorkQueueSchedules) ---

/** Prefix of every problem of one declared schedule. */
export const scheduleAt = (index: number, id: unknown) =>
  `schedules[${index}]${typeof id === 'string' ? ` (${JSON.stringify(id)})` : ''}: `;
export const schedulesNotArray = (got: string) =>
  `schedules must be an array of { id, every | cron, data, ... }, got ${got}`;
export const scheduleNotObject = (index: number, got: string) =>
  `${scheduleAt(index, undefined)}must be an object { id, every | cron, data, ... }, got ${got}`;
export const badPruneSchedules = (got: string) => `pruneSchedules must be a boolean, got ${got}`;
export const duplicateScheduleId = (first: number) =>
  `the same id as schedules[${first}]; schedule ids are unique per queue`;
const SCHEDULE_KEY_HINTS: Readonly<Record<string, string>> = {
  pattern: "BullMQ's pattern is `cron` here",
  jobId: 'the job of a tick has the id `<schedule id>:<tick ms>`',
  attempts: "BullMQ's attempts is `maxAttempts` here",
};
export const unknownScheduleKey = (key: string) => {
  const hint = SCHEDULE_KEY_HINTS[key];
  return `${key} is not a known option${hint ? ` (${hint})` : ''}; known: id, every, cron, tz, startAt, endAt, limit, missed, missedAfterMs, data, name, priority, maxAttempts, backoff, skipIfRunning, group`;
};
export const scheduleUpserted = (queue: string, id: string, outcome: string) =>
  `queue "${queue}": schedule "${id}" ${outcome}`;
export const schedulePruned = (queue: string, id: string) =>
  `queue "${queue}": schedule "${id}" removed (in Redis but not declared; pruneSchedules is on)`;
export const schedulesFailed = (queue: string) =>
  `queue "${queue}": its declared schedules could not be applied`;
export const scheduleFailed = (id: string, error: string) => `schedule "${id}": ${error}`;
export const pruneFailed = (error: string) => `pruning undeclared schedules: ${error}`;
export const schedulesWithoutCleaner = (queues: readonly string[]) =>
  `schedules are declared (queues ${queues.map((q) => `"${q}"`).join(', ')}) but the cleaner is off (cleaner: false): their ticks are made ahead by clean(), so they stop after the first ones unless something else runs queue.clean() regularly`;
export const schedulesTimeout = (queue: string, ms: number, lastError: string | undefined) =>
  `queue "${queue}": its declared schedules could not be applied within ${ms} ms, Redis did not answer${lastError ? `: ${lastError}` : ''}`;

// --- Processors (WorkQueueExplorer, WorkQueueRegistrar) ---

export const CANNOT_START_PROCESSORS = 'WorkQueueModule cannot start its processors';
export const CANNOT_START = 'WorkQueueModule cannot start';
export const NO_FOR_ROOT =
  'WorkQueueModule.forRoot() (or forRootAsync()) is not imported: import it once, in the root module, for the connection; registerQueue() wherever a queue is used';
export const forRootTwice = (prefixes: readonly string[]) =>
  `WorkQueueModule.forRoot() is imported ${prefixes.length} times (each call is a module of its own; prefixes ${prefixes.map((p) => JSON.stringify(p)).join(', ')}): import it once, in the root module (a second Redis: forRoot({ connections }) or registerQueue({ connection }))`;
/** Prefix of every problem of one `@Processor()` class. */
export const processorAt = (queueName: string, className: string) =>
  `@Processor(${quote(queueName)}) on ${className}: `;
/** Why a request-scoped or transient processor is refused, and what to do instead. */
export const notSingleton = (at: string, transient: boolean) => {
  const what = transient
    ? 'is transient'
    : 'is request-scoped (durable or not), or depends on a request-scoped provider';
  return `${at}${what}; a processor must be a singleton (default scope), since its worker runs for the whole application. Make it and its dependencies default-scoped; for per-job state, inject ModuleRef and call moduleRef.resolve(Service, ContextIdFactory.create()) in the handler`;
};
export const badProcessorQueue = (at: string, queueName: unknown) =>
  `${at}the queue name must be a non-empty string${
    typeof queueName === 'object' && queueName !== null && 'name' in queueName
      ? " (@nestjs/bullmq's @Processor({ name }) is @Processor(name) here)"
      : ''
  }`;
export const queueNotRegistered = (at: string, queueName: string) =>
  `${at}queue ${JSON.stringify(queueName)} is not registered; add WorkQueueModule.registerQueue({ name: ${quote(queueName)} }) to the imports of a module`;
export const queueOverridden = (at: string, queueName: string) =>
  `${at}queue ${JSON.stringify(queueName)} is not the module's own: its provider (getQueueToken(${quote(queueName)})) was overridden, so its processor has no queue to run on; override the processor too (overrideProvider), or test with a real queue (WorkQueueTestingModule, docs/testing.md)`;
export const processorFoundTwice = (at: string, className: string) =>
  `${at}found twice (is ${className} provided in more than one module? Provide it once)`;
export const conflictingOption = (
  at: string,
  key: string,
  value: unknown,
  owner: string,
  was: unknown,
) =>
  `${at}${key} is ${JSON.stringify(value)} but ${owner} (same queue, same worker) sets ${JSON.stringify(was)}; set worker options on one of them`;
export const twoCatchAlls = (at: string, queueName: string, first: string, second: string) =>
  `${at}two catch-all @Process() methods for queue ${JSON.stringify(queueName)}: ${first} and ${second}`;
export const badJobName = (at: string, name: unknown, methodName: string) =>
  `${at}@Process(${JSON.stringify(name)}) on ${methodName}: the job name must be a string of 1-200 characters`;
export const twoNamedHandlers = (
  at: string,
  name: string,
  queueName: string,
  first: string,
  second: string,
) =>
  `${at}two @Process(${quote(name)}) methods for queue ${JSON.stringify(queueName)}: ${first} and ${second}`;
export const noProcessMethod = (at: string) =>
  `${at}no @Process() method; add @Process() to the method that handles jobs`;
/** `Class.method()`: how a `@Process()` method is named in messages. */
export const handlerName = (h: { className: string; methodName: string }) =>
  `${h.className}.${h.methodName}()`;
export const noHandler = (jobName: string | undefined, classNames: readonly string[]) => {
  const where = classNames.join(', ');
  return jobName === undefined
    ? `no @Process() handler for unnamed jobs in ${where}`
    : `no @Process() handler for job name ${JSON.stringify(jobName)} in ${where}`;
};

// --- Workers (WorkQueueRegistrar) ---

export const workerStarted = (queue: string, concurrency: number, classNames: readonly string[]) =>
  `worker of queue "${queue}" started (concurrency ${concurrency}; ${classNames.join(', ')})`;
export const workerNotStarted = (queue: string, classNames: readonly string[]) =>
  `worker of queue "${queue}" not started in this instance (workers option; ${classNames.join(', ')})`;
export const workerStartTimeout = (
  queue: string,
  ms: number,
  waits: readonly string[],
  lastError: string | undefined,
) =>
  `queue "${queue}": its worker could not start within ${ms} ms, Redis did not answer${waits.length > 0 ? ` (waiting for: ${waits.join(', ')})` : ''}${lastError ? `: ${lastError}` : ''}`;
/** Redis answered, the sandbox of the processor was still loading its module. */
export const workerSandboxStartTimeout = (queue: string, ms: number) =>
  `queue "${queue}": its worker could not start within ${ms} ms: its sandbox was still loading the processor's module (Redis answered)`;
export const workerError = (queue: string, error: string) =>
  `queue "${queue}": worker error: ${error}`;
export const jobDead = (queue: string, jobId: string, error: string) =>
  `queue "${queue}": job ${jobId} dead-lettered: ${error}`;
export const jobRetrying = (
  queue: string,
  jobId: string,
  attempt: number,
  maxAttempts: number,
  error: string,
) =>
  `queue "${queue}": job ${jobId} failed attempt ${attempt}/${maxAttempts}, will retry: ${error}`;
export const leaseLost = (queue: string, jobId: string, reason: string) =>
  `queue "${queue}": job ${jobId}: ${reason}; its result is not recorded here`;
export const NO_SHUTDOWN_HOOKS =
  'No SIGTERM listener found: call app.enableShutdownHooks() so that workers drain on shutdown (running jobs finish or go back to their queue at once); without it they are only recovered when their leases or heartbeats expire';

// --- Connections (WorkQueueContext) ---

export const connectionLabel = (key?: string) =>
  key === undefined ? 'Redis connection' : `Redis connection "${key}"`;
export const queueConnectionLabel = (queue: string) => `Redis connection of queue "${queue}"`;
export const connectionLost = (label: string, why: string) => `${label} ${why}; reconnecting`;
export const connectionErrorWhy = (error: string) => `error: ${error}`;
export const CONNECTION_CLOSED_WHY = 'lost';
export const connectionRestored = (label: string) => `${label} restored`;

// --- Cleaner (WorkQueueCleaner) ---

export const cleanerCleaned = (queue: string, done: readonly (readonly [string, number])[]) =>
  `cleaner: queue "${queue}": ${done.map(([k, n]) => `${k} ${n}`).join(', ')}`;
export const registeredAfterBootstrap = (queues: readonly string[], missed: readonly string[]) =>
  `${queues.map((q) => JSON.stringify(q)).join(', ')} registered after the application's bootstrap (a module loaded by LazyModuleLoader?): ${missed.join(', ')} will not run — processors, @QueueEventsListener() classes and declared schedules are found at bootstrap only; import the module that registers them when the application starts`;
export const cleanerQueueFailed = (queue: string, error: string) =>
  `cleaner: queue "${queue}": ${error} (will retry next round)`;

/** A value as a problem message quotes it (the core's one way: NaN as NaN, not null). */
export const show = shown;
