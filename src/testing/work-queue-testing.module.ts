// WorkQueueTestingModule: WorkQueueModule.forRoot() set up for tests (a prefix of the app's own,
// quick timeouts, the keys removed on close).
import {
  Inject,
  Injectable,
  Module,
  type BeforeApplicationShutdown,
  type DynamicModule,
} from '@nestjs/common';
import { invalidOptions, within } from '../../lib/internal.js';
import type {
  WorkQueueDefaults,
  WorkQueueModuleOptions,
} from '../interfaces/work-queue-module-options.interface.js';
import { WorkQueueCleaner } from '../work-queue.cleaner.js';
import { WorkQueueContext } from '../work-queue.context.js';
import { WorkQueueModule } from '../work-queue.module.js';
import { moduleOptionProblems } from '../utils/validate-options.util.js';
import { describe } from './checks.js';
import { removeKeys } from './remove-keys.js';
import { uniquePrefix } from './unique-prefix.js';

/** `WorkQueueModule.forRoot()` options, every one optional, and `removeKeys`. */
export interface WorkQueueTestingOptions extends Partial<WorkQueueModuleOptions> {
  /**
   * Delete every key of the prefix when the app closes (after its workers stopped). Default:
   * true when the prefix is the module's own (`uniquePrefix()`), false when you give `prefix`.
   */
  removeKeys?: boolean;
}

/** What the testing module sets, unless the options say otherwise (`defaults` merge). */
export const WORK_QUEUE_TESTING_DEFAULTS = {
  logger: false,
  shutdownTimeoutMs: 1_000,
  cleaner: { intervalMs: 100 },
  defaults: {
    leaseMs: 5_000,
    heartbeatTimeoutMs: 1_000,
    commandTimeoutMs: 2_000,
    backoff: { type: 'fixed', delayMs: 10 },
  },
} as const satisfies Omit<WorkQueueModuleOptions, 'connection'> & { defaults: WorkQueueDefaults };

/** How long `app.close()` may spend removing the keys (best effort: it never fails the close). */
const REMOVE_KEYS_TIMEOUT_MS = 2_000;
const REMOVE_KEYS = 'WorkQueueTesting:removeKeys';

/** Closes the workers early (idempotent) so that the keys go only once nothing writes them. */
@Injectable()
class WorkQueueTestingKeys implements BeforeApplicationShutdown {
  constructor(
    private readonly context: WorkQueueContext,
    private readonly cleaner: WorkQueueCleaner,
    @Inject(REMOVE_KEYS) private readonly remove: boolean,
  ) {}

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.remove) return;
    const { context } = this;
    const timeoutMs = context.shutdownTimeoutMs;
    await Promise.all([
      ...context.workers.map((w) => w.close({ timeoutMs })),
      this.cleaner.beforeApplicationShutdown(),
    ]);
    // (Not through a connection that is down: its commands would wait out the whole bound.)
    const clients = new Set(
      [context.client, ...context.queues.map((q) => q.client)].filter((c) => c.status === 'ready'),
    );
    const removing = Promise.all(
      [...clients].map((client) => removeKeys(client, context.prefix).catch(() => 0)),
    );
    await within(removing, REMOVE_KEYS_TIMEOUT_MS);
  }
}

/**
 * `WorkQueueModule.forRoot()` for tests, in `Test.createTestingModule({ imports: [...] })` next
 * to `WorkQueueModule.registerQueue(...)`. Each app it is compiled into gets:
 *
 * - its own prefix, `uniquePrefix()` (unless `prefix` is given), whose keys are deleted when the
 *   app closes (`removeKeys`);
 * - `connection` as given, else `{ url: process.env.REDIS_URL }` (read when the app is
 *   compiled), else it fails with `INVALID_OPTIONS`;
 * - `WORK_QUEUE_TESTING_DEFAULTS`: no logging, a 1 s shutdown, the cleaner every 100 ms, and
 *   queue defaults of 5 s leases, a 1 s heartbeat timeout, 2 s command timeouts and retries
 *   10 ms apart (your `defaults` are merged over them; `registerQueue` options still win).
 */
@Module({})
export class WorkQueueTestingModule {
  static forRoot(options: WorkQueueTestingOptions = {}): DynamicModule {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw invalidOptions('invalid WorkQueueTestingModule options', [
        `options must be an object, got ${describe(options)}`,
      ]);
    }
    const { removeKeys, ...rest } = options;
    const problems: string[] = [];
    if (removeKeys !== undefined && typeof removeKeys !== 'boolean') {
      problems.push(`removeKeys must be a boolean, got ${describe(removeKeys)}`);
    }
    const d = WORK_QUEUE_TESTING_DEFAULTS;
    // Only a missing option takes the testing default: any other value (null, a number for
    // `defaults`) goes on to the module's checks, which refuse what forRoot() refuses.
    const or = <V, D>(v: V | undefined, fallback: D): V | D => (v === undefined ? fallback : v);
    const { defaults } = rest;
    const build = (connection: WorkQueueModuleOptions['connection']): WorkQueueModuleOptions => ({
      ...rest,
      connection,
      prefix: or(rest.prefix, uniquePrefix()),
      logger: or(rest.logger, d.logger),
      shutdownTimeoutMs: or(rest.shutdownTimeoutMs, d.shutdownTimeoutMs),
      cleaner: or(rest.cleaner, d.cleaner),
      defaults: isPlainObject(defaults) ? { ...d.defaults, ...defaults } : or(defaults, d.defaults),
    });
    // Every problem at once, now — but a missing connection: REDIS_URL is read when the app is
    // compiled (a test may set it in a beforeAll, after this call).
    problems.push(...moduleOptionProblems(build(rest.connection ?? { url: 'redis://localhost' })));
    if (problems.length > 0) {
      throw invalidOptions('invalid WorkQueueTestingModule options', problems);
    }
    const moduleOptions = () => build(rest.connection ?? connectionFromEnv());
    return {
      module: WorkQueueTestingModule,
      imports: [WorkQueueModule.forRootAsync({ useFactory: moduleOptions })],
      providers: [
        { provide: REMOVE_KEYS, useValue: removeKeys ?? rest.prefix === undefined },
        WorkQueueTestingKeys,
      ],
    };
  }
}

function isPlainObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function connectionFromEnv(): WorkQueueModuleOptions['connection'] {
  const url = process.env.REDIS_URL?.trim();
  if (url) return { url };
  throw invalidOptions('invalid WorkQueueTestingModule options', [
    'no connection: pass { connection: { url } } (startTestRedis() gives one) or set REDIS_URL',
  ]);
}
