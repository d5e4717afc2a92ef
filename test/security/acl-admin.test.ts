/**
 * drain() and obliterate() as a Redis ACL user with the minimal command set and the commands the
 * docs list for obliterate (docs/reliability-and-security.md, Security): it ran into a command
 * the list lacked (ZREMRANGEBYSCORE). A script refused a command says where the lists are; a
 * worker's idle wait refused (here by the ACL; NOREPLICAS after a failover) is a typed error.
 */
import { describe, expect, it } from '@jest/globals';
import { Worker, WorkQueue, WorkQueueError } from '../../lib/index.js';
import { aclRules, aclServer, OBLITERATE_COMMANDS } from '../support/acl.js';
import { errorOf } from '../support/core.js';
import { waitFor } from '../support/wait.js';

const redis = aclServer();
const asUser = redis.asUser;

describe('drain() and obliterate() as a limited ACL user', () => {
  it('work with the documented extras; a script meeting a command the user lacks points to the lists', async () => {
    const admin = redis.admin();
    await admin.call(
      'ACL',
      'SETUSER',
      'wq-ob',
      ...(await aclRules(admin, 'ob', 'ob-pass', OBLITERATE_COMMANDS)),
    );
    await admin.call('ACL', 'SETUSER', 'wq-min', ...(await aclRules(admin, 'mi', 'mi-pass')));
    const full = asUser('wq-ob', 'ob-pass');
    const min = asUser('wq-min', 'mi-pass');
    try {
      for (const [client, prefix] of [
        [full, 'ob'],
        [min, 'mi'],
      ] as const) {
        const q = new WorkQueue<number>(client, 'jobs', { prefix, logger: false });
        await q.addBulk([1, 2, 3].map((data) => ({ data })));
        await q.add(4, { delayMs: 60_000 });
        if (client === full) {
          expect(await q.drain({ delayed: true })).toBe(4);
          await q.add(5);
          await q.obliterate();
          // (Its id counter stays, as obliterate() keeps it: ids are not given twice.)
          expect(await admin.keys('ob:*')).toEqual(['ob:{jobs}:id']);
        } else {
          expect(await q.drain({ delayed: true })).toBe(4);
          // Flow control's commands are not in the minimal set: its script meets one.
          const e = (await errorOf(q.pause())) as WorkQueueError;
          expect(e.code).toBe('SCRIPT_ERROR');
          expect(e.message).toMatch(/reliability-and-security\.md#security/);
        }
      }
    } finally {
      full.disconnect();
      min.disconnect();
    }
  });

  it("a worker's idle wait refused by Redis is reported as a WorkQueueError, not a raw reply", async () => {
    const admin = redis.admin();
    const rules = (await aclRules(admin, 'nb', 'nb-pass')).filter((r) => r !== '+blmove');
    await admin.call('ACL', 'SETUSER', 'wq-nb', ...rules);
    const client = asUser('wq-nb', 'nb-pass');
    const errors: unknown[] = [];
    const q = new WorkQueue<number>(client, 'jobs', { prefix: 'nb', logger: false });
    const w = new Worker(q, async () => 'ok', { idleTimeoutMs: 1_000 });
    w.on('error', (e) => errors.push(e));
    try {
      await w.start();
      await waitFor(() => errors.length > 0, { what: "the idle wait's refusal" });
      expect(errors[0]).toBeInstanceOf(WorkQueueError);
      expect(errors[0]).toMatchObject({
        code: 'SCRIPT_ERROR',
        message: expect.stringMatching(/^queue jobs: idle wait: NOPERM/),
      });
    } finally {
      await w.close();
      client.disconnect();
    }
  });
});
