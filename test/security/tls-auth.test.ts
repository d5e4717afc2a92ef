/**
 * TLS and AUTH: a private redis-server with `--tls-port` (a throwaway CA and server certificate
 * made with openssl in a temp dir) and `requirepass`. Through `rediss://:password@host`, a queue
 * adds, a Worker processes jobs — its heartbeat thread connecting over TLS with the same
 * credentials — and a Nest app does the same; wrong or missing credentials fail clearly.
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueue,
  WorkQueueError,
  WorkQueueModule,
  Worker,
  type Job,
} from '../../src/index.js';
import { errorOf } from '../support/core.js';
import { getFreePort, startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const PASSWORD = 'tls-test-Pa55';
let dir: string;
let server: RedisHandle;
let tlsPort: number;
let ca: Buffer;
const clients: Redis[] = [];

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'wq-tls-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '1',
    '-subj',
    '/CN=wq-test-ca',
  );
  openssl(
    'req',
    '-new',
    ...ec,
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  );
  writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  );
  ca = readFileSync(path.join(dir, 'ca.crt'));
  tlsPort = await getFreePort();
  server = await startRedis({
    extraArgs: [
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      path.join(dir, 'server.crt'),
      '--tls-key-file',
      path.join(dir, 'server.key'),
      '--tls-ca-cert-file',
      path.join(dir, 'ca.crt'),
      '--tls-auth-clients',
      'no',
    ],
  });
  // The harness pings the plain port until the server is up; then AUTH becomes required.
  const admin = new Redis(server.url);
  await admin.config('SET', 'requirepass', PASSWORD);
  admin.disconnect();
}, 30_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const tlsUrl = (password = PASSWORD) => `rediss://:${password}@localhost:${tlsPort}`;

function tlsClient(url = tlsUrl()): Redis {
  const c = new Redis(url, { tls: { ca }, maxRetriesPerRequest: 2, retryStrategy: () => null });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

describe('rediss:// with a password', () => {
  it('the connection really is TLS and authenticated', async () => {
    const c = tlsClient();
    expect(await c.ping()).toBe('PONG');
    const me = String(await c.client('INFO'));
    expect(me).toMatch(new RegExp(`laddr=127\\.0\\.0\\.1:${tlsPort} `));
    // Plain TCP on the TLS port gets nowhere; the plain port wants the password.
    const plain = new Redis(server.port, server.host, {
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      lazyConnect: true,
    });
    plain.on('error', () => undefined);
    await plain.connect().catch(() => undefined);
    await expect(plain.ping()).rejects.toThrow(/NOAUTH|closed/);
    plain.disconnect();
  });

  it('a Worker processes jobs over TLS; its heartbeat thread beats over TLS too', async () => {
    const q = new WorkQueue<{ n: number }>(tlsClient(), 'tls', {
      logger: false,
      heartbeatTimeoutMs: 500,
    });
    const seen: number[] = [];
    const worker = new Worker(
      q,
      (job) => {
        seen.push(job.data.n);
        if (job.data.n === 0) {
          // Block the event loop past the heartbeat timeout: only the thread can beat now.
          const until = Date.now() + 900;
          while (Date.now() < until) {
            /* busy */
          }
        }
        return job.data.n * 2;
      },
      { concurrency: 5 },
    );
    const errors: unknown[] = [];
    worker.on('error', (e) => errors.push(e));
    await worker.start();
    // The heartbeat thread's own first beat landed (over its own TLS + AUTH connection); the
    // main thread's bridge beats do not resolve this.
    const heartbeat = (
      worker as unknown as { heartbeat: { threaded: boolean; firstBeat: Promise<void> } }
    ).heartbeat;
    expect(heartbeat.threaded).toBe(true);
    const beat = await Promise.race([
      heartbeat.firstBeat.then(() => 'beat'),
      new Promise((r) => setTimeout(() => r('no beat'), 3_000)),
    ]);
    expect(beat).toBe('beat');
    await q.addBulk(Array.from({ length: 50 }, (_, n) => ({ data: { n } })));
    await waitFor(() => seen.length === 50, { what: '50 jobs over TLS' });
    // The heartbeat (from the thread's own TLS connection) kept the worker alive.
    const report = await q.clean();
    expect(report.deadWorkers).toBe(0);
    expect((await q.counts()).workers).toBe(1);
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'completes' });
    await worker.close({ timeoutMs: 1_000 });
    expect(errors).toEqual([]);
    expect((await q.counts()).workers).toBe(0);
  });

  it('a Nest app (connection with TLS options and the password) processes jobs', async () => {
    const done: string[] = [];
    @Processor('tls-nest', { concurrency: 3 })
    class TlsProcessor {
      @Process()
      run(job: Job<string>) {
        done.push(job.data);
      }
    }
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: {
            redis: { host: 'localhost', port: tlsPort, password: PASSWORD, tls: { ca } },
          },
          logger: false,
        }),
        WorkQueueModule.registerQueue({ name: 'tls-nest' }),
      ],
      providers: [TlsProcessor],
    })
    class TlsApp {}
    const ref = await Test.createTestingModule({ imports: [TlsApp] }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const q = app.get<WorkQueue<string>>(getQueueToken('tls-nest'));
    await q.addBulk([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    await waitFor(() => done.length === 3, { what: 'the Nest worker over TLS' });
    await app.close();
    expect(done.sort()).toEqual(['a', 'b', 'c']);
  });

  it('a wrong password or an untrusted certificate fails with REDIS_UNAVAILABLE, not a hang', async () => {
    const wrong = new WorkQueue(tlsClient(tlsUrl('not-the-password')), 'tls', { logger: false });
    const e1 = (await errorOf(wrong.add(1))) as WorkQueueError;
    expect(e1.code).toBe('REDIS_UNAVAILABLE');
    expect(e1.message).not.toContain('not-the-password');
    const untrusted = new Redis(tlsUrl(), { maxRetriesPerRequest: 0, retryStrategy: () => null });
    untrusted.on('error', () => undefined);
    clients.push(untrusted);
    const e2 = (await errorOf(
      new WorkQueue(untrusted, 'tls', { logger: false }).add(1),
    )) as WorkQueueError;
    expect(e2.code).toBe('REDIS_UNAVAILABLE');
    expect(e2.message).not.toContain(PASSWORD);
  });
});
