/**
 * Refused input says what is wrong without showing a payload or a password
 * (docs/reliability-and-security.md, "No secrets in logs"): a string given where BullMQ put a
 * job's name is our job's data, and a connection given in a wrong shape may carry a password
 * (in a URL or a field of its own). Nothing here reaches Redis (an offline client).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue, WorkQueueError } from '../../lib/index.js';
import { moduleOptionProblems } from '../../src/utils/validate-options.util.js';
import { errorOf, offlineClient } from '../support/core.js';

const PASSWORD = 'hunter2-redis-PW';
const SECRET = 'card 4111-1111-1111-1111 cvv 123';
const URL_WITH_PASSWORD = `redis://:${PASSWORD}@redis.internal:6379`;

let offline: Redis;
beforeAll(async () => {
  offline = await offlineClient();
});
afterAll(() => offline.disconnect());

describe('no payload or password in an error message', () => {
  it("add(<string>, { … }) read as BullMQ's add(name, data) hints without showing the string (our data)", async () => {
    const q = new WorkQueue(offline, 'refusals', { logger: false });
    const add = q.add.bind(q) as (...a: unknown[]) => Promise<unknown>;
    const e = await errorOf(add(SECRET, { reportId: 1 }));
    expect(e).toBeInstanceOf(WorkQueueError);
    const text = `${(e as Error).message}\n${(e as WorkQueueError).problems.join('\n')}`;
    expect(text).toContain("reads as BullMQ's add(name, data)");
    expect(text).not.toContain('4111');
    // BullMQ's add(name, data) with a string as data: that string is not shown either.
    const shape = await errorOf(add('email', SECRET));
    expect((shape as Error).message).toContain('options must be an object, got a string');
    expect((shape as Error).message).not.toContain('4111');
    // The same in a flow-less addBulk entry is no BullMQ shape: its option problem alone.
    const bulk = await errorOf(q.addBulk([{ data: SECRET, opts: { reportId: 1 } as never }]));
    expect((bulk as Error).message).not.toContain('4111');
  });

  it("core: a client or options of the wrong shape (a URL, BullMQ's { connection }) are shown masked", () => {
    const given: Array<[unknown, unknown]> = [
      [URL_WITH_PASSWORD, {}], // a URL where the ioredis client goes
      [{ connection: { host: 'h', password: PASSWORD } }, {}], // BullMQ's options as the client
      [{ host: 'h', port: 1, password: PASSWORD }, {}], // ioredis options, not a client
      [offline, URL_WITH_PASSWORD], // a URL as the queue's options
    ];
    for (const [c, options] of given) {
      const e = (() => {
        try {
          new WorkQueue(c as Redis, 'refusals', options as never);
        } catch (x) {
          return x;
        }
        throw new Error('expected a refusal');
      })();
      expect(e).toBeInstanceOf(WorkQueueError);
      const text = `${(e as Error).message}\n${(e as WorkQueueError).problems.join('\n')}`;
      expect(text).toMatch(/client must be|options must be/);
      expect(text).not.toContain(PASSWORD);
    }
  });

  it('module options: a connection of the wrong shape is described with its passwords masked', () => {
    const cases: unknown[] = [
      URL_WITH_PASSWORD, // forRoot(url)
      { connection: URL_WITH_PASSWORD }, // connection: url (not { url })
      { connection: { url: { password: PASSWORD } } },
      { connection: { url: `http://:${PASSWORD}@h` } },
      { connection: { redis: URL_WITH_PASSWORD } }, // redis: url (not { url })
      { connection: { url: 'redis://h', password: PASSWORD } }, // BullMQ's flat options
      { connections: URL_WITH_PASSWORD },
      { connections: { a: URL_WITH_PASSWORD } },
      { connection: { sentinels: [{ host: '', port: 0, password: PASSWORD }], name: 'm' } },
      { connection: { sentinels: URL_WITH_PASSWORD, name: 'm' } },
      { connection: { cluster: { nodes: URL_WITH_PASSWORD } } },
      { connection: `redis://user:${PASSWORD}@x@h:1/0` }, // an '@' in the password
      { connection: { cluster: { nodes: { port: 1, tls: { key: PASSWORD, pfx: PASSWORD } } } } },
    ];
    for (const options of cases) {
      const problems = moduleOptionProblems(options);
      expect(problems.length).toBeGreaterThan(0);
      for (const p of problems) expect(p).not.toContain(PASSWORD);
    }
    // What is shown still says what was given (the URL, its password masked).
    expect(moduleOptionProblems({ connection: URL_WITH_PASSWORD })).toEqual([
      expect.stringContaining('got "redis://:***@redis.internal:6379"'),
    ]);
  });
});
