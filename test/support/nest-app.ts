/**
 * Helpers for the Nest tests (test/e2e/nest-*.test.ts, test/unit/nest-*.test.ts): booting a
 * test app, a recording logger, and a plain client to look at what an app did.
 */
import { afterEach } from '@jest/globals';
import type {
  INestApplication,
  LoggerService,
  ModuleMetadata,
  NestApplicationOptions,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../src/index.js';
import { deleteKeys, testRedisUrl } from './keys.js';

export interface NestAppOptions extends Pick<
  ModuleMetadata,
  'imports' | 'providers' | 'controllers'
> {
  /** Options of `createNestApplication` (default `{ logger: false }`). */
  app?: NestApplicationOptions;
  /** Logger of the testing module itself (`Test.createTestingModule(...).setLogger`). */
  moduleLogger?: LoggerService;
}

/**
 * A Nest app of a testing module with the given imports, providers and controllers, not
 * initialized yet (e.g. to call `enableShutdownHooks()` first).
 */
export async function createNestApp(options: NestAppOptions): Promise<INestApplication> {
  const { imports = [], providers = [], controllers = [] } = options;
  const builder = Test.createTestingModule({ imports, providers, controllers });
  if (options.moduleLogger) builder.setLogger(options.moduleLogger);
  const ref = await builder.compile();
  return ref.createNestApplication(options.app ?? { logger: false });
}

/** `createNestApp`, then `app.init()` (which starts the workers). */
export async function startNestApp(options: NestAppOptions): Promise<INestApplication> {
  const app = await createNestApp(options);
  await app.init();
  return app;
}

/** `startNestApp` for one test file: every app it starts is closed after each test. */
export function nestAppsClosedAfterEach(): (options: NestAppOptions) => Promise<INestApplication> {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  return async (options) => {
    const app = await createNestApp(options);
    apps.push(app); // closed even if init fails
    await app.init();
    return app;
  };
}

export interface LogEntry {
  level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  message: string;
}

/** A LoggerService that records what it is told (and prints errors when WQ_TEST_LOG is set). */
export class MemoryLogger implements LoggerService {
  readonly entries: LogEntry[] = [];
  log(message: unknown): void {
    this.add('log', message);
  }
  error(message: unknown): void {
    this.add('error', message);
  }
  warn(message: unknown): void {
    this.add('warn', message);
  }
  debug(message: unknown): void {
    this.add('debug', message);
  }
  verbose(message: unknown): void {
    this.add('verbose', message);
  }
  fatal(message: unknown): void {
    this.add('fatal', message);
  }
  messages(level?: LogEntry['level']): string[] {
    return this.entries.filter((e) => !level || e.level === level).map((e) => e.message);
  }
  private add(level: LogEntry['level'], message: unknown): void {
    this.entries.push({ level, message: String(message) });
    if (process.env.WQ_TEST_LOG) process.stderr.write(`[${level}] ${String(message)}\n`);
  }
}

/** A plain client + queue on the same prefix, to look at what an app did (closed by `close`). */
export class Inspector {
  readonly client = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
  private readonly prefixes = new Set<string>();

  queue<T = unknown>(name: string, prefix: string): WorkQueue<T> {
    this.prefixes.add(prefix);
    return new WorkQueue<T>(this.client, name, { prefix, logger: false });
  }

  /** Remember a prefix whose keys `close()` removes. */
  track(prefix: string): string {
    this.prefixes.add(prefix);
    return prefix;
  }

  async close(): Promise<void> {
    for (const p of this.prefixes) await deleteKeys(this.client, `${p}:*`);
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

/** Resources Node keeps alive, by type (timers, sockets, ...), minus what Jest itself keeps. */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
