/**
 * Flows as a Redis ACL user with the minimal command set and the commands the docs list for
 * flows (docs/reliability-and-security.md, Security): adds, children's results, cancels and
 * repair with no ACL denial.
 */
import { describe, expect, it } from '@jest/globals';
import { FlowProducer, WorkQueue, Worker } from '../../lib/index.js';
import { aclRules, aclServer, FLOW_COMMANDS } from '../support/acl.js';
import { waitFor } from '../support/wait.js';

const redis = aclServer();
const asUser = redis.asUser;

describe('flows as a user with the minimal command set and the flows extras', () => {
  it('adds, runs, reads and cancels flows with no ACL denial', async () => {
    const admin = redis.admin();
    await admin.call(
      'ACL',
      'SETUSER',
      'wq-flows',
      ...(await aclRules(admin, 'fl', 'fl-pass', FLOW_COMMANDS)),
    );
    await admin.call('ACL', 'LOG', 'RESET');
    const client = asUser('wq-flows', 'fl-pass');
    const options = { prefix: 'fl', logger: false } as const;
    const parents = new WorkQueue<string>(client, 'parents', options);
    const kids = new WorkQueue<number>(client, 'kids', options);
    const flows = new FlowProducer(client, { prefix: 'fl' });
    const results: unknown[] = [];
    const errors: unknown[] = [];
    const workers = [
      new Worker(kids, (job) => job.data * 2, { idleTimeoutMs: 200 }),
      new Worker(parents, async (job) => void results.push(await job.getChildrenResults()), {
        idleTimeoutMs: 200,
      }),
    ];
    for (const w of workers) w.on('error', (e) => errors.push(e));
    try {
      const added = await flows.add({
        queue: 'parents',
        id: 'p1',
        data: 'sum',
        children: [1, 2].map((n) => ({ queue: 'kids', data: n })),
      });
      expect(await parents.getJob('p1')).toMatchObject({ id: 'p1' });
      await waitFor(() => results.length === 1, { what: 'the parent run with its results' });
      const ids = added.children!.map((c) => `kids:${c.job.id}`);
      expect(results[0]).toEqual({ [ids[0]!]: 2, [ids[1]!]: 4 });
      // A parent cancelled while its children wait (the workers paused): they are cancelled.
      for (const w of workers) await w.pause();
      await flows.add({
        queue: 'parents',
        id: 'p2',
        data: 'x',
        children: [{ queue: 'kids', id: 'k2', data: 3 }],
      });
      expect(await parents.cancel('p2')).toBe(true);
      await waitFor(async () => (await kids.getJob('k2')) === null, { what: 'k2 cancelled' });
      expect((await parents.repair()).fixes).toEqual([]);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
      client.disconnect();
    }
    expect(errors).toEqual([]);
    expect(await admin.call('ACL', 'LOG')).toEqual([]);
  });
});
