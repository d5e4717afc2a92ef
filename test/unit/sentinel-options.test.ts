/**
 * Redis Sentinel connection options of WorkQueueModule.forRoot() (`{ sentinels, name, ... }`, or
 * inside `{ redis }`): refused at bootstrap with every problem listed. No test here reaches Redis.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { WorkQueueError, WorkQueueModule, type WorkQueueModuleOptions } from '../../src/index.js';
import { moduleOptionProblems } from '../../src/utils/validate-options.util.js';

const open: TestingModule[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

const NAME = "must be the master's name as the sentinels know it (sentinel monitor <name> …)";
const SENTINELS = "must be a non-empty array of the sentinels' addresses { host, port }";

describe('Sentinel connection options', () => {
  it('accepts the flat form with any other ioredis options, and the form inside { redis }', () => {
    const sentinels = [{ host: '127.0.0.1', port: 26379 }, { port: 26380 }, {}];
    for (const connection of [
      { sentinels, name: 'mymaster' },
      { sentinels, name: 'mymaster', password: 'pw', sentinelPassword: 'spw', db: 2 },
      { sentinels, name: 'mymaster', role: 'master' as const },
      { redis: { sentinels, name: 'mymaster' } },
    ]) {
      expect(moduleOptionProblems({ connection })).toEqual([]);
      expect(moduleOptionProblems({ connection, connections: { other: connection } })).toEqual([]);
    }
  });

  it('refuses Sentinel options without a name, without sentinels, or with bad ones: every problem listed', () => {
    expect(moduleOptionProblems({ connection: { sentinels: [{ port: 26379 }] } })).toEqual([
      `connection.name ${NAME}, got undefined`,
    ]);
    expect(moduleOptionProblems({ connection: { name: 'mymaster' } })).toEqual([
      `connection.sentinels ${SENTINELS}, got undefined`,
    ]);
    expect(
      moduleOptionProblems({
        connection: { sentinels: [], name: '' },
        connections: {
          a: { sentinels: [{ host: '', port: 0 }, 'h:1', { port: 70000 }], role: 'slave' },
          b: { redis: { sentinels: { host: 'h' }, name: 5 } },
          c: { url: 'redis://h', sentinels: [{ port: 1 }], name: 'm' },
        },
      }),
    ).toEqual([
      `connection.sentinels ${SENTINELS}, got []`,
      `connection.name ${NAME}, got ""`,
      'connections.a.sentinels[0] must be { host?: string, port?: 1..65535 }, got {"host":"","port":0}',
      'connections.a.sentinels[1] must be { host?: string, port?: 1..65535 }, got "h:1"',
      'connections.a.sentinels[2] must be { host?: string, port?: 1..65535 }, got {"port":70000}',
      `connections.a.name ${NAME}, got undefined`,
      `connections.a.role must be 'master' (queues write to the master), got "slave"`,
      `connections.b.redis.sentinels ${SENTINELS}, got {"host":"h"}`,
      `connections.b.redis.name ${NAME}, got 5`,
      'connections.c has url and sentinels: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
    ]);
  });

  it('forRoot: bad Sentinel options fail the bootstrap with INVALID_OPTIONS, one problem per line', async () => {
    const options = {
      connection: { sentinels: [], name: 'mymaster', role: 'slave' },
    } as unknown as WorkQueueModuleOptions;
    let error: unknown;
    try {
      open.push(
        await Test.createTestingModule({ imports: [WorkQueueModule.forRoot(options)] }).compile(),
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WorkQueueError);
    expect((error as WorkQueueError).code).toBe('INVALID_OPTIONS');
    expect((error as WorkQueueError).message.split('\n')).toEqual([
      'invalid WorkQueueModule options:',
      `  - connection.sentinels ${SENTINELS}, got []`,
      `  - connection.role must be 'master' (queues write to the master), got "slave"`,
    ]);
  });
});
