/**
 * A Redis the queue cannot use: too old (a fake server speaking RESP that says it is 6.0.0),
 * or unreachable (a closed port) at bootstrap. Each gives a clear typed error in bounded time,
 * never a hang, and the health indicator says down.
 * (An evicting Redis — maxmemory-policy allkeys-lru — is covered by core/redis-checks.test.ts for
 * the warning and e2e/nest-health.test.ts for the health detail.)
 */
import 'reflect-metadata';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Module, type INestApplication } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../../src/health/index.js';
import {
  Process,
  Processor,
  WorkQueue,
  WorkQueueError,
  WorkQueueModule,
  Worker,
  type WorkQueueModuleOptions,
} from '../../../src/index.js';
import { errorOf } from '../../support/core.js';
import { getFreePort } from '../../support/redis-server.js';

/** A tiny RESP server that claims to be Redis `version` and answers a handful of commands. */
class FakeRedis {
  readonly commands: string[][] = [];
  private readonly sockets = new Set<net.Socket>();
  private server!: net.Server;
  port = 0;

  constructor(private readonly version: string) {}

  async start(): Promise<void> {
    this.server = net.createServer((sock) => {
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
      sock.on('error', () => undefined);
      let buf = Buffer.alloc(0);
      sock.on('data', (chunk) => {
        buf = Buffer.concat([buf, chunk]);
        for (;;) {
          const parsed = parseCommand(buf);
          if (!parsed) break;
          buf = buf.subarray(parsed.used);
          this.commands.push(parsed.args);
          sock.write(this.reply(parsed.args));
        }
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private reply(args: string[]): string {
    const cmd = (args[0] ?? '').toUpperCase();
    if (cmd === 'INFO') {
      const text = [
        '# Server',
        `redis_version:${this.version}`,
        'redis_mode:standalone',
        '# Persistence',
        'loading:0',
        '# Memory',
        'maxmemory_policy:noeviction',
        '',
      ].join('\r\n');
      return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
    }
    if (cmd === 'PING') return '+PONG\r\n';
    if (cmd === 'CLIENT' || cmd === 'SELECT' || cmd === 'QUIT') return '+OK\r\n';
    return `-ERR unknown command '${cmd}' (fake Redis ${this.version})\r\n`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** One RESP array of bulk strings from the front of `buf`, or undefined when incomplete. */
function parseCommand(buf: Buffer): { args: string[]; used: number } | undefined {
  if (buf.length === 0) return undefined;
  if (buf[0] !== 0x2a) {
    // Inline command (e.g. "PING\r\n").
    const end = buf.indexOf('\r\n');
    if (end < 0) return undefined;
    return { args: buf.subarray(0, end).toString().split(' '), used: end + 2 };
  }
  let pos = buf.indexOf('\r\n');
  if (pos < 0) return undefined;
  const n = Number(buf.subarray(1, pos).toString());
  pos += 2;
  const args: string[] = [];
  for (let i = 0; i < n; i++) {
    const end = buf.indexOf('\r\n', pos);
    if (end < 0) return undefined;
    const len = Number(buf.subarray(pos + 1, end).toString());
    const start = end + 2;
    if (buf.length < start + len + 2) return undefined;
    args.push(buf.subarray(start, start + len).toString());
    pos = start + len + 2;
  }
  return { args, used: pos };
}

describe('Redis older than 6.2 (a fake server that says 6.0.0)', () => {
  const fake = new FakeRedis('6.0.0');
  const clients: Redis[] = [];
  beforeAll(() => fake.start());
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await fake.stop();
  });
  const client = () => {
    const c = new Redis(fake.url, { maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };

  it('every queue operation fails with REDIS_VERSION, and no script is ever sent', async () => {
    const q = new WorkQueue(client(), 'old', { logger: false });
    const codes: Record<string, unknown> = {};
    const ops: Record<string, () => Promise<unknown>> = {
      add: () => q.add({ a: 1 }),
      lease: () => q.lease(),
      counts: () => q.counts(),
      clean: () => q.clean(),
      getJob: () => q.getJob('x'),
      repair: () => q.repair(),
    };
    for (const [name, op] of Object.entries(ops)) {
      const e = await errorOf(op);
      codes[name] = e instanceof WorkQueueError ? e.code : e;
    }
    expect(codes).toEqual(Object.fromEntries(Object.keys(ops).map((k) => [k, 'REDIS_VERSION'])));
    const e = (await errorOf(q.add(1))) as WorkQueueError;
    expect(e.message).toBe(
      'queue old: Redis 6.0.0 is too old; nestjs-work-queue needs Redis >= 6.2',
    );
    const sent = fake.commands.map((c) => c[0]!.toUpperCase());
    expect(sent).not.toContain('EVALSHA');
    expect(sent).not.toContain('EVAL');
  });

  it('a Worker does not start (REDIS_VERSION) and close() still resolves', async () => {
    const q = new WorkQueue(client(), 'old-worker', { logger: false });
    const w = new Worker(q, () => undefined, { autostart: false });
    const e = await errorOf(w.start());
    expect((e as WorkQueueError).code).toBe('REDIS_VERSION');
    await w.close({ timeoutMs: 100 });
  });

  it('Nest: app.init() rejects with REDIS_VERSION; without processors the health check is down', async () => {
    @Processor('old-nest')
    class OldProcessor {
      @Process()
      run() {
        return 1;
      }
    }
    const options: WorkQueueModuleOptions = { connection: { url: fake.url }, logger: false };
    @Module({
      imports: [
        WorkQueueModule.forRoot(options),
        WorkQueueModule.registerQueue({ name: 'old-nest' }),
      ],
      providers: [OldProcessor],
    })
    class WithProcessor {}
    const ref = await Test.createTestingModule({ imports: [WithProcessor] }).compile();
    const app = ref.createNestApplication({ logger: false });
    const e = await errorOf(app.init());
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('REDIS_VERSION');
    expect((e as WorkQueueError).message).toMatch(/Redis 6\.0\.0 is too old/);
    await app.close();

    @Module({
      imports: [
        WorkQueueModule.forRoot(options),
        WorkQueueModule.registerQueue({ name: 'old-nest' }),
        TerminusModule,
        WorkQueueHealthModule,
      ],
    })
    class HealthOnly {}
    const ref2 = await Test.createTestingModule({ imports: [HealthOnly] }).compile();
    const app2 = ref2.createNestApplication({ logger: false });
    await app2.init();
    const result = await app2.get(WorkQueueHealthIndicator).isHealthy('queues');
    expect(result.queues.status).toBe('down');
    expect(String(result.queues.message)).toMatch(/Redis 6\.0\.0 is too old/);
    await app2.close();
  });
});

describe('Redis unreachable at bootstrap (a closed port)', () => {
  let port: number;
  beforeAll(async () => {
    port = await getFreePort();
  });

  it('core: with bounded client retries, add rejects fast with REDIS_UNAVAILABLE naming the cause', async () => {
    const c = new Redis({
      port,
      host: '127.0.0.1',
      maxRetriesPerRequest: 2,
      retryStrategy: () => 20,
    });
    c.on('error', () => undefined);
    try {
      const q = new WorkQueue(c, 'nowhere', { logger: false });
      const t0 = Date.now();
      const e = (await errorOf(q.add(1))) as WorkQueueError;
      expect(Date.now() - t0).toBeLessThan(2_000);
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(e.message).toMatch(/^queue nowhere: cannot read Redis INFO: /);
    } finally {
      c.disconnect();
    }
  });

  it('Nest: app.init() rejects within the start timeout (10 s) with a clear error; no hang, the health check is down', async () => {
    @Processor('nowhere')
    class NowhereProcessor {
      @Process()
      run() {
        return 1;
      }
    }
    let app: INestApplication | undefined;
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: `redis://:not-logged-pw@127.0.0.1:${port}` },
          logger: false,
          cleaner: false,
        }),
        WorkQueueModule.registerQueue({ name: 'nowhere' }),
        TerminusModule,
        WorkQueueHealthModule,
      ],
      providers: [NowhereProcessor],
    })
    class AppModule {}
    try {
      const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
      app = ref.createNestApplication({ logger: false });
      // While it tries: the health check answers "down" at once.
      const health = app.get(WorkQueueHealthIndicator);
      const t0 = Date.now();
      const init = errorOf(app.init());
      await new Promise((r) => setTimeout(r, 300));
      const down = await health.isHealthy('queues', { timeoutMs: 500 });
      expect(down.queues.status).toBe('down');
      expect(String(down.queues.message)).toMatch(/^Redis is unreachable/);
      const e = (await init) as WorkQueueError;
      const took = Date.now() - t0;
      expect(e).toBeInstanceOf(WorkQueueError);
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      // The queue's commandTimeoutMs (5 s by default) bounds the start, naming the cause.
      expect(e.message).toBe(
        `queue nowhere: INFO: no reply from Redis within 5000 ms (connection reconnecting; the command may still run if it reconnects): connect ECONNREFUSED 127.0.0.1:${port}`,
      );
      expect(took).toBeGreaterThanOrEqual(4_900);
      expect(took).toBeLessThan(10_000);
      expect(e.message).not.toContain('not-logged-pw');
    } finally {
      const t1 = Date.now();
      await app?.close();
      expect(Date.now() - t1).toBeLessThan(6_000);
    }
  }, 30_000);
});
