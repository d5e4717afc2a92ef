// Several connections: named ones (`forRoot({ connections })` + `registerQueue({ configKey })`)
// and a queue's own (`registerQueue({ connection })`). Each lives in its own Redis database of
// the shared test server, so where the keys land shows which connection a queue used.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  InjectQueue,
  Process,
  Processor,
  RECONNECT_OPTIONS,
  WorkQueue,
  WorkQueueContext,
  WorkQueueError,
  WorkQueueModule,
  type Job,
} from '../../src/index.js';
import {
  moduleOptionProblems,
  registerQueueProblems,
} from '../../src/utils/validate-options.util.js';
import { deleteKeys, keysMatching, testRedisUrl, uniqueName } from '../support/keys.js';
import { startNestApp } from '../support/nest-app.js';

/** The shared test server's URL on another database. */
function onDb(db: number): string {
  const url = new URL(testRedisUrl());
  url.pathname = `/${db}`;
  return url.toString();
}

const DB_NAMED = 7;
const DB_OWN = 8;
const prefix = uniqueName('conn');
const inspectors = [testRedisUrl(), onDb(DB_NAMED), onDb(DB_OWN)].map(
  (url) => new Redis(url, { maxRetriesPerRequest: 3 }),
);
afterAll(async () => {
  await Promise.all(inspectors.map((c) => deleteKeys(c, `${prefix}:*`)));
  inspectors.forEach((c) => c.disconnect());
});

describe('several connections', () => {
  it('puts each queue on its connection: the module one, a named one, its own', async () => {
    const seen: Record<string, string[]> = { main: [], reports: [], audit: [] };
    const done = new Map<string, () => void>();
    const processed = (queue: string) =>
      new Promise<void>((resolve) => done.set(queue, () => resolve()));

    @Processor('main')
    class MainProcessor {
      @Process()
      handle(job: Job<string>) {
        seen.main!.push(job.data);
        done.get('main')?.();
      }
    }
    @Processor('reports')
    class ReportsProcessor {
      @Process('daily')
      daily(job: Job<string>) {
        seen.reports!.push(job.data);
        done.get('reports')?.();
      }
    }
    @Processor('audit')
    class AuditProcessor {
      @Process()
      handle(job: Job<string>) {
        seen.audit!.push(job.data);
        done.get('audit')?.();
      }
    }
    @Injectable()
    class Producer {
      constructor(
        @InjectQueue('main') readonly main: WorkQueue<string>,
        @InjectQueue('reports') readonly reports: WorkQueue<string>,
        @InjectQueue('audit') readonly audit: WorkQueue<string>,
      ) {}
    }

    const app = await startNestApp({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: testRedisUrl() },
          connections: { reporting: { url: onDb(DB_NAMED) } },
          prefix,
          logger: false,
        }),
        WorkQueueModule.registerQueue(
          { name: 'main' },
          { name: 'reports', configKey: 'reporting' },
          { name: 'audit', connection: { url: onDb(DB_OWN) } },
        ),
      ],
      providers: [MainProcessor, ReportsProcessor, AuditProcessor, Producer],
    });
    let closed = false;
    try {
      const producer = app.get(Producer);
      const all = Promise.all(['main', 'reports', 'audit'].map(processed));
      await producer.main.add('m');
      await producer.reports.add('r', { name: 'daily' });
      await producer.audit.add('a');
      await all;
      expect(seen).toEqual({ main: ['m'], reports: ['r'], audit: ['a'] });

      const [mainDb, namedDb, ownDb] = await Promise.all(
        inspectors.map((c) => keysMatching(c, `${prefix}:*`)),
      );
      const queuesIn = (keys: string[]) =>
        [...new Set(keys.map((k) => /\{([^}]+)\}/.exec(k)?.[1]))].filter(Boolean).sort();
      expect(queuesIn(mainDb!)).toEqual(['main']);
      expect(queuesIn(namedDb!)).toEqual(['reports']);
      expect(queuesIn(ownDb!)).toEqual(['audit']);

      const context = app.get(WorkQueueContext);
      const clients = ['main', 'reports', 'audit'].map(
        (q) => app.get<WorkQueue>(getQueueToken(q)).client,
      );
      expect(new Set(clients).size).toBe(3);
      expect(clients[0]).toBe(context.client);
      // Made by the module: each resumes soon after Redis is back (RECONNECT_OPTIONS).
      for (const c of clients) expect(c.options).toMatchObject(RECONNECT_OPTIONS);
      await app.close();
      closed = true;
      // Every connection the module made is closed with the app.
      expect(clients.map((c) => c.status)).toEqual(['end', 'end', 'end']);
    } finally {
      if (!closed) await app.close();
    }
  });

  it('fails the bootstrap for an unknown configKey, naming the known ones', async () => {
    const moduleRef = Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: testRedisUrl() },
          connections: { reporting: { url: onDb(DB_NAMED) } },
          logger: false,
        }),
        WorkQueueModule.registerQueue({ name: 'emails', configKey: 'reportng' }),
      ],
    });
    const error = await moduleRef.compile().then(
      async (ref) => {
        await ref.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkQueueError);
    expect((error as WorkQueueError).problems).toEqual([
      'configKey "reportng" is not a connection of WorkQueueModule.forRoot({ connections }) (known: "reporting")',
    ]);
  });

  it('validates named and per-queue connections', () => {
    expect(
      moduleOptionProblems({
        connection: { url: 'redis://x' },
        connections: { ok: { url: 'redis://y' }, bad: { url: 'http://z' }, 'no spaces': {} },
      }),
    ).toEqual([
      'connections.bad.url must be a redis:// or rediss:// URL, got "http://z"',
      `connections: "no spaces" is not a valid configKey (1-100 letters, digits, '.', '_', '-' or ':')`,
      'connections.no spaces is empty: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
    ]);
    expect(moduleOptionProblems({ connection: { url: 'redis://x' }, connections: [] })).toEqual([
      'connections must be an object of named connections { [configKey]: connection }, got []',
    ]);
    expect(
      registerQueueProblems({ name: 'q', configKey: 'a', connection: { url: 'redis://x' } }),
    ).toEqual(['give configKey (a named connection) or connection (its own), not both']);
    expect(registerQueueProblems({ name: 'q', connection: { url: 'nope' } })).toEqual([
      'connection.url must be a redis:// or rediss:// URL, got "nope"',
    ]);
    expect(registerQueueProblems({ name: 'q', configKey: '' })).toEqual([
      'configKey must be the name of a connection in WorkQueueModule.forRoot({ connections }), got ""',
    ]);
  });
});
