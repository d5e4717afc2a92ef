/**
 * Sentinels unreachable at bootstrap (closed ports): a bounded failure with one message naming
 * the master and every sentinel with what went wrong there — never a hang — for the module and
 * the core alike; shutting down afterwards is bounded too.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  Process,
  Processor,
  SENTINEL_CLIENT_OPTIONS,
  WorkQueue,
  WorkQueueError,
  WorkQueueModule,
} from '../../src/index.js';
import { errorOf } from '../support/core.js';
import { createNestApp } from '../support/nest-app.js';
import { getFreePort } from '../support/redis-server.js';

/** The one message for sentinels at `ports` (all refusing connections) and master `name`. */
function expected(context: string, name: string, ports: number[]): RegExp {
  const addresses = ports.map((p) => `127.0.0.1:${p}`);
  const said = addresses.map((a) => `${a}: cannot connect`).join('; ');
  return new RegExp(
    `^${context}: no reply from Redis within 1000 ms \\(connection \\w+; the command may still run if it reconnects\\): ` +
      `Redis Sentinel master '${name}' \\(sentinels ${addresses.join(', ')}\\): no sentinel gave the master's address \\(${said}\\)$`,
  );
}

describe('sentinels unreachable at bootstrap', () => {
  it('Nest: app.init() rejects within commandTimeoutMs with REDIS_UNAVAILABLE naming the master and each sentinel; app.close() is bounded', async () => {
    const ports = [await getFreePort(), await getFreePort()];
    @Processor('unreachable')
    class Handler {
      @Process()
      run() {
        return 1;
      }
    }
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: { sentinels: ports.map((port) => ({ host: '127.0.0.1', port })), name: 'm1' },
          defaults: { commandTimeoutMs: 1_000 },
          logger: false,
          cleaner: false,
        }),
        WorkQueueModule.registerQueue({ name: 'unreachable' }),
      ],
      providers: [Handler],
    })
    class AppModule {}
    const app = await createNestApp({ imports: [AppModule] });
    try {
      const e = (await errorOf(app.init())) as WorkQueueError;
      expect(e).toBeInstanceOf(WorkQueueError);
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(e.message).toMatch(expected('queue unreachable: INFO', 'm1', ports));
    } finally {
      await app.close();
    }
  });

  it('core: add() rejects within commandTimeoutMs with the same message', async () => {
    const ports = [await getFreePort(), await getFreePort(), await getFreePort()];
    const client = new Redis({
      ...SENTINEL_CLIENT_OPTIONS,
      sentinels: ports.map((port) => ({ host: '127.0.0.1', port })),
      name: 'm2',
    });
    client.on('error', () => undefined);
    try {
      const q = new WorkQueue(client, 'unreachable-core', {
        logger: false,
        commandTimeoutMs: 1_000,
      });
      const e = (await errorOf(q.add(1))) as WorkQueueError;
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(e.message).toMatch(expected('queue unreachable-core: INFO', 'm2', ports));
    } finally {
      client.disconnect();
    }
  });
});
