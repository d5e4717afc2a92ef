/**
 * Nothing the library logs contains a payload or a connection password: a Nest app on
 * `redis://:<password>@host` (module + app loggers captured), core queues and workers (queue
 * logger captured), the console (spied), and the errors thrown at the user — while jobs succeed,
 * fail, time out, die with no handler, carry an undecodable payload, and while connections are
 * killed, paused, and refused for a wrong password.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Module, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  NonRetryableError,
  Process,
  Processor,
  WorkQueue,
  WorkQueueError,
  WorkQueueModule,
  Worker,
  type Job,
} from '../../src/index.js';
import { errorOf } from '../support/core.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { putPayload } from '../support/payloads.js';

const PASSWORD = 'hunter2-redis-PW';
const WRONG_PASSWORD = 'wrong-PW-0451';
const SECRET = 'SECRET-PAYLOAD-4111111111111111';
// JSON.parse quotes the first characters of what it cannot parse: look for those too.
const SECRETS = [PASSWORD, WRONG_PASSWORD, SECRET, SECRET.slice(0, 10), '4111111111'];

const lines: string[] = [];
const record =
  (where: string) =>
  (message: unknown, ...rest: unknown[]) => {
    lines.push(`${where}: ${[message, ...rest].map(show).join(' ')}`);
  };
function show(v: unknown): string {
  if (v instanceof Error) return `${v.name}: ${v.message}\n${v.stack ?? ''}`;
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

class CaptureLogger implements LoggerService {
  log = record('nest.log');
  error = record('nest.error');
  warn = record('nest.warn');
  debug = record('nest.debug');
  verbose = record('nest.verbose');
  fatal = record('nest.fatal');
}

let server: RedisHandle;
let admin: Redis;
const spies: Array<{ mockRestore(): void }> = [];

beforeAll(async () => {
  for (const m of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    spies.push(jest.spyOn(console, m).mockImplementation(record(`console.${m}`)));
  }
  server = await startRedis();
  admin = new Redis(server.url);
  await admin.config('SET', 'requirepass', PASSWORD);
  await admin.auth(PASSWORD);
});
afterAll(async () => {
  admin.disconnect();
  await server.dispose();
  for (const s of spies) s.mockRestore();
});

const url = (password = PASSWORD) => `redis://:${password}@127.0.0.1:${server.port}`;

describe('no payload or password in any log line or error', () => {
  it('a Nest app and core workers through successes, failures and connection faults', async () => {
    const handled: string[] = [];
    @Processor('secrets', { concurrency: 4, jobTimeoutMs: 300 })
    class SecretProcessor {
      @Process('ok')
      ok(job: Job<{ card: string }>) {
        handled.push(job.id);
        return { stored: job.data.card.length };
      }
      @Process('fail')
      fail() {
        throw new Error('the card processor refused');
      }
      @Process('refuse')
      refuse() {
        throw new NonRetryableError('declined');
      }
      @Process('hang')
      hang() {
        return new Promise(() => undefined);
      }
    }
    const logger = new CaptureLogger();
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: url() },
          logger,
          defaults: { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 20 } },
          cleaner: { intervalMs: 100 },
        }),
        WorkQueueModule.registerQueue({ name: 'secrets', leaseMs: 1_000, heartbeatTimeoutMs: 500 }),
      ],
      providers: [SecretProcessor],
    })
    class SecretApp {}
    const ref = await Test.createTestingModule({ imports: [SecretApp] }).compile();
    const app = ref.createNestApplication({ logger });
    app.enableShutdownHooks();
    await app.init();
    const q = app.get<WorkQueue<{ card: string }>>(getQueueToken('secrets'));
    const data = { card: SECRET };
    await q.addBulk([
      { data, opts: { name: 'ok' } },
      { data, opts: { name: 'ok' } },
      { data, opts: { name: 'fail' } },
      { data, opts: { name: 'refuse' } },
      { data, opts: { name: 'hang' } },
      { data, opts: { name: 'nobody-handles-this' } },
    ]);
    // A payload that cannot be decoded, containing the secret.
    await putPayload(admin, q.keys, '999', SECRET);
    await admin.rpush(q.keys.pending(5), '999');
    await admin.rpush(q.keys.wake, '1');
    await waitFor(async () => (await q.counts()).dead === 5, {
      what: '5 dead jobs',
      timeoutMs: 10_000,
    });
    expect(handled).toHaveLength(2);
    // Connection faults: killed connections, a pause longer than the lease.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await q.add(data, { name: 'ok' });
    await waitFor(() => handled.length === 3, { what: 'a job after reconnecting' });
    await app.close();

    // Core: a worker whose Redis refuses the password; errors go to the queue's logger.
    const wrong = new Redis(url(WRONG_PASSWORD), {
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });
    wrong.on('error', (e) => record('wrong.on(error) (ours)')(e));
    const qw = new WorkQueue(wrong, 'secrets', {
      logger: { warn: record('queue.warn'), error: record('queue.error') },
    });
    const thrown: unknown[] = [];
    thrown.push(await errorOf(qw.add(data)));
    const w = new Worker(qw, () => null);
    await waitFor(() => lines.some((l) => l.startsWith('queue.error')), {
      what: 'the worker to log its failed start',
    });
    await w.close({ timeoutMs: 100 });
    wrong.disconnect();

    // Options with a password in a bad URL: the error does not echo it.
    thrown.push(
      await errorOf(
        Test.createTestingModule({
          imports: [WorkQueueModule.forRoot({ connection: { url: `http://:${PASSWORD}@x:1` } })],
        }).compile(),
      ),
    );
    for (const e of thrown) {
      expect(e).toBeInstanceOf(WorkQueueError);
      lines.push(`thrown: ${show(e)}`);
    }

    const all = lines.join('\n');
    // The test saw what it meant to: dead letters, connection loss, the refused password.
    expect(all).toMatch(/dead-lettered/);
    expect(all).toMatch(/undecodable: payload is not valid JSON/);
    expect(all).toMatch(/Redis connection (lost|error)/);
    expect(all).toMatch(/WRONGPASS/);
    expect(all).toMatch(
      /connection\.url must be a redis:\/\/ or rediss:\/\/ URL, got "http:\/\/:\*\*\*@x:1"/,
    );
    for (const secret of SECRETS) {
      const leaks = lines.filter((l) => l.includes(secret));
      expect({ secret, leaks }).toEqual({ secret, leaks: [] });
    }
  }, 30_000);
});
