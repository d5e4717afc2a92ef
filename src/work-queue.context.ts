// The module's per-application state: validated options, the Redis connections, and the
// registries of queues and of the workers the module runs (getQueue, getWorker).
import {
  Inject,
  Injectable,
  Logger,
  type LoggerService,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { invalidOptions } from '../lib/internal.js';
import { errorMessage, QUEUE_DEFAULTS, WorkQueue, type Worker } from '../lib/internal.js';
import type { RegisterQueueOptions } from './interfaces/register-queue-options.interface.js';
import type {
  WorkQueueCleanerOptions,
  WorkQueueModuleOptions,
  WorkQueueQueueDefaults,
  WorkQueueWorkerDefaults,
} from './interfaces/work-queue-module-options.interface.js';
import {
  moduleOptionProblems,
  queueDefaultsOf,
  registerQueueProblems,
  workerDefaultsOf,
} from './utils/validate-options.util.js';
import { closeClient, connect, connectionSignature } from './utils/redis-connections.util.js';
import { stableStringify } from './utils/stable-stringify.util.js';
import { WORK_QUEUE_LOGGER_CONTEXT, WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import {
  CONNECTION_CLOSED_WHY,
  connectionErrorWhy,
  connectionLabel,
  connectionLost,
  connectionRestored,
  INVALID_MODULE_OPTIONS,
  invalidRegistration,
  queueConnectionLabel,
  registeredTwice,
  registeredTwiceDetails,
  registerQueueWhere,
  unknownConfigKey,
} from './work-queue.messages.js';
import { WORK_QUEUE_MODULE_OPTIONS } from './work-queue.module-definition.js';
import { caughtLogger } from './utils/caught-logger.util.js';

/**
 * The module's state for one application: validated options, the Redis connection, and the
 * queues registered so far (a per-application registry, not static state). Created at bootstrap
 * from the `forRoot()` options, which is where invalid options fail with every problem listed.
 */
@Injectable()
export class WorkQueueContext implements OnApplicationShutdown {
  /** The connection every queue uses (workers open their own duplicates). */
  readonly client: Redis | Cluster;
  /** False for a client given as `connection.client`: the module never closes it. */
  readonly ownsClient: boolean;
  readonly prefix: string;
  /** The module's logger; undefined when `logger: false`. */
  readonly logger: LoggerService | undefined;
  readonly shutdownTimeoutMs: number;
  readonly cleaner: WorkQueueCleanerOptions;
  readonly workerDefaults: Readonly<WorkQueueWorkerDefaults>;
  readonly queueDefaults: Readonly<WorkQueueQueueDefaults>;
  /** `forRoot({ workers })`: which queues' workers this instance runs (see `runsWorker`). */
  readonly workersOption: boolean | readonly string[];
  private readonly registry = new Map<
    string,
    { queue: WorkQueue; signature: string; workers: boolean | undefined }
  >();
  private readonly workerRegistry = new Map<string, Worker>();
  /** The named connections (`forRoot({ connections })`), created with the context. */
  private readonly named = new Map<string, { client: Redis | Cluster; owned: boolean }>();
  /** Connections of single queues (`registerQueue({ connection })`), by queue name. */
  private readonly own = new Map<string, { client: Redis | Cluster; owned: boolean }>();
  private closing: Promise<void> | undefined;
  private readonly failureClosers: Array<() => Promise<unknown>> = [];
  private failed: Promise<void> | undefined;

  constructor(@Inject(WORK_QUEUE_MODULE_OPTIONS) options: WorkQueueModuleOptions) {
    const problems = moduleOptionProblems(options);
    if (problems.length > 0) throw invalidOptions(INVALID_MODULE_OPTIONS, problems);
    this.prefix = options.prefix ?? QUEUE_DEFAULTS.prefix;
    this.logger =
      options.logger === false
        ? undefined
        : caughtLogger(options.logger ?? new Logger(WORK_QUEUE_LOGGER_CONTEXT));
    this.shutdownTimeoutMs =
      options.shutdownTimeoutMs ?? WORK_QUEUE_MODULE_DEFAULTS.shutdownTimeoutMs;
    this.cleaner = options.cleaner ?? {};
    this.workersOption = options.workers ?? true;
    const defaults = options.defaults as Record<string, unknown> | undefined;
    this.workerDefaults = workerDefaultsOf(defaults);
    this.queueDefaults = queueDefaultsOf(defaults);
    this.ownsClient = options.connection.client === undefined;
    // Owned connections are lazy: nothing connects until the first command, so a bootstrap that
    // fails before any queue is used leaves no socket behind.
    this.client = connect(options.connection);
    if (this.ownsClient) this.watchConnection(this.client, connectionLabel());
    for (const [key, c] of Object.entries(options.connections ?? {})) {
      const client = connect(c);
      this.named.set(key, { client, owned: c.client === undefined });
      if (c.client === undefined) this.watchConnection(client, connectionLabel(key));
    }
  }

  /**
   * The registrations of one `registerQueue(a, b, …)` or `registerQueueAsync(…)` call, checked
   * together before the first is created: one error lists every problem of each invalid one
   * (named when there are several), not only the first queue's. `found[i]`: problems already
   * found in registration i (an async factory's result that is no options object).
   */
  checkRegistrations(
    registrations: readonly RegisterQueueOptions[],
    via = 'registerQueue',
    found: readonly (readonly string[])[] = [],
  ): void {
    const base = { ...this.queueDefaults, prefix: this.prefix };
    const bad = registrations
      .map((r, i) => ({
        r,
        problems: found[i]?.length ? found[i] : registerQueueProblems(r, base),
      }))
      .filter((x) => x.problems.length > 0);
    if (bad.length === 0) return;
    const nameOf = (r: unknown) =>
      typeof r === 'object' && r !== null ? (r as { name?: unknown }).name : r;
    const named = bad.length > 1;
    throw invalidOptions(
      invalidRegistration(
        registerQueueWhere(
          bad.map((x) => nameOf(x.r)),
          via,
        ),
      ),
      bad.flatMap((x) =>
        x.problems.map((p) => (named ? `${JSON.stringify(nameOf(x.r))}: ${p}` : p)),
      ),
    );
  }

  /**
   * The queue registered under `name` (by `registerQueue`/`registerQueueAsync`); created on the
   * first registration. Registering a name again returns the same queue when the options are the
   * same, and fails when they differ.
   */
  registerQueue(registration: RegisterQueueOptions, via = 'registerQueue'): WorkQueue {
    const problems = registerQueueProblems(registration, {
      ...this.queueDefaults,
      prefix: this.prefix,
    });
    const where = registerQueueWhere(
      [
        typeof registration === 'object' && registration !== null
          ? registration.name
          : registration,
      ],
      via,
    );
    if (problems.length > 0) throw invalidOptions(invalidRegistration(where), problems);
    const { name, configKey, connection, schedules, pruneSchedules, workers, ...overrides } =
      registration;
    const signature = stableStringify({
      ...overrides,
      schedules,
      pruneSchedules,
      workers,
      configKey,
      connection: connection === undefined ? undefined : connectionSignature(connection),
    });
    const known = this.registry.get(name);
    if (known) {
      if (known.signature === signature) return known.queue;
      throw invalidOptions(
        registeredTwice(name),
        registeredTwiceDetails(known.signature, signature),
      );
    }
    let client = this.client;
    if (configKey !== undefined) {
      const found = this.named.get(configKey);
      if (!found) {
        const known = [...this.named.keys()];
        throw invalidOptions(invalidRegistration(where), [unknownConfigKey(configKey, known)]);
      }
      client = found.client;
    } else if (connection !== undefined) {
      client = connect(connection);
      this.own.set(name, { client, owned: connection.client === undefined });
      if (connection.client === undefined) {
        this.watchConnection(client, queueConnectionLabel(name));
      }
    }
    const queue = new WorkQueue(client, name, {
      ...this.queueDefaults,
      prefix: this.prefix,
      ...overrides,
      logger: this.logger ?? false,
    });
    this.registry.set(name, { queue, signature, workers });
    return queue;
  }

  /**
   * Whether this instance runs the worker of the queue's `@Processor()` classes:
   * `registerQueue({ workers })` when given, else `forRoot({ workers })` (true, false, or the
   * listed queues).
   */
  runsWorker(name: string): boolean {
    const own = this.registry.get(name)?.workers;
    if (own !== undefined) return own;
    const all = this.workersOption;
    return typeof all === 'boolean' ? all : all.includes(name);
  }

  /** The registered queue of that name, if any. */
  getQueue<T = unknown, R = unknown>(name: string): WorkQueue<T, R> | undefined {
    return this.registry.get(name)?.queue as WorkQueue<T, R> | undefined;
  }

  /** Every registered queue, in registration order. */
  get queues(): WorkQueue[] {
    return [...this.registry.values()].map((r) => r.queue);
  }

  /**
   * The worker the module runs for the `@Processor()` classes of a queue (set during the
   * module's `onApplicationBootstrap`, before yours), e.g. to listen to its events or pause it.
   * Undefined for a queue without a processor, or whose worker this instance does not run
   * (`forRoot({ workers })`, `registerQueue({ workers })`).
   */
  getWorker<T = unknown, R = unknown>(queueName: string): Worker<T, R> | undefined {
    return this.workerRegistry.get(queueName) as Worker<T, R> | undefined;
  }

  /** Every worker the module runs, in start order. */
  get workers(): Worker[] {
    return [...this.workerRegistry.values()];
  }

  /** @internal Called by the module when it creates a processor's worker; not for applications. */
  addWorker(worker: Worker): void {
    this.workerRegistry.set(worker.queue.name, worker);
  }

  /** @internal How a bootstrap hook closes what it opened if the bootstrap fails. */
  onBootstrapFailure(close: () => Promise<unknown>): void {
    this.failureClosers.push(close);
  }

  /**
   * @internal A hook of the module failed the bootstrap: close, in the background, what the
   * module opened (workers, readers, timers, then its connections) as app.close() would — the
   * caller of `NestFactory.createApplicationContext` gets no app to close, and an open
   * connection would keep its process alive.
   */
  bootstrapFailed(): void {
    this.failed ??= Promise.allSettled(this.failureClosers.map((close) => close()))
      .then((results) => {
        for (const r of results)
          if (r.status === 'rejected') this.logger?.error(errorMessage(r.reason));
        return this.onApplicationShutdown();
      })
      .catch((e: unknown) => this.logger?.error(errorMessage(e)));
  }

  /** Closes the connection the module created (never a client given by the user). */
  onApplicationShutdown(): Promise<void> {
    this.closing ??= this.close();
    return this.closing;
  }

  private async close(): Promise<void> {
    // Connections the queues opened themselves (waitForResult's reader, cancel acks).
    await Promise.all(this.queues.map((q) => q.close()));
    const owned = [
      ...(this.ownsClient ? [this.client] : []),
      ...[...this.named.values(), ...this.own.values()].filter((c) => c.owned).map((c) => c.client),
    ];
    await Promise.all(owned.map((client) => closeClient(client)));
  }

  /** Log losing and regaining the connection once each, not every reconnect attempt. */
  private watchConnection(client: Redis | Cluster, label: string): void {
    let lost = false;
    const lose = (why: string) => {
      if (lost || this.closing) return;
      lost = true;
      this.logger?.error(connectionLost(label, why));
    };
    client.on('error', (e: unknown) => lose(connectionErrorWhy(errorMessage(e))));
    client.on('close', () => lose(CONNECTION_CLOSED_WHY));
    client.on('ready', () => {
      if (!lost) return;
      lost = false;
      this.logger?.log(connectionRestored(label));
    });
  }
}
