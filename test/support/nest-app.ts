/**
 * Helpers for the Nest e2e tests (test/e2e/nest-*.test.ts).
 */
import type { LoggerService } from '@nestjs/common';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../src/index.js';
import { deleteKeys, testRedisUrl } from '../support/keys.js';

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
