/**
 * A RateLimitError gives its job back without counting an attempt: the event log says
 * 'released', as for every other give-back (release, shutdown, reconnect). It read added,
 * active, active.
 */
import { afterAll, expect, it } from '@jest/globals';
import { RateLimitError, Worker } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

it('a RateLimitError gives the job back: released (grouped or not), then active again', async () => {
  const q = fx.queue<string>();
  const plain = await q.add('plain');
  const grouped = await q.add('grouped', { group: 'g' });
  const limited = new Set<string>();
  const w = new Worker(q, (job) => {
    if (limited.has(job.id)) return;
    limited.add(job.id);
    throw new RateLimitError(1);
  });
  try {
    await waitFor(async () => (await q.counts()).pending + (await q.counts()).leased === 0, {
      what: 'both jobs done',
    });
  } finally {
    await w.close();
  }
  const all = (await fx.client().xrange(q.keys.eventLog, '-', '+'))
    .flatMap(([id, fields]) => parseEntry(id, fields))
    .map((e) => `${e.kind} ${e.id}`);
  for (const { id } of [plain, grouped]) {
    // (A lease answered while the worker still held the limit gives its job back unstarted
    // too: one more active/released pair.)
    const kinds = all.filter((l) => l.endsWith(` ${id}`)).map((l) => l.split(' ')[0]);
    expect(kinds.join(' ')).toMatch(/^added (active released )+active completed$/);
  }
});
