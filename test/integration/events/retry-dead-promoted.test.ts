/**
 * retryDead brings a dead-lettered job back to its pending list: the event log says 'promoted'
 * (it waits again, as a delayed job that came due). It logged nothing: a reader saw 'dead', then
 * the job's next 'active'.
 */
import { afterAll, expect, it } from '@jest/globals';
import { parseEntry } from '../../../lib/events/parse.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

it.each(['one', 'all'] as const)(
  'retryDead (%s) logs promoted for each requeued job (grouped or not), nothing for a job not dead',
  async (how) => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    const plain = await q.add('plain', { id: 'p' });
    const grouped = await q.add('grouped', { id: 'g', group: 'tenant' });
    for (let i = 0; i < 2; i++) {
      const [lease] = await q.lease();
      await q.fail(lease!, new Error('boom'));
    }
    if (how === 'one') {
      expect(await q.retryDead('p')).toBe(true);
      expect(await q.retryDead('g')).toBe(true);
      expect(await q.retryDead('p')).toBe(false); // pending now: not requeued again
    } else {
      expect(await q.retryDead({ all: true })).toBe(2);
    }
    const events = (await fx.client().xrange(q.keys.eventLog, '-', '+')).flatMap(([id, fields]) =>
      parseEntry(id, fields),
    );
    for (const { id } of [plain, grouped]) {
      const kinds = events.filter((e) => e.id === id).map((e) => e.kind);
      expect([id, kinds.join(' ')]).toEqual([id, 'added active failed dead promoted']);
    }
    const g = events.filter((e) => e.id === 'g' && e.kind === 'promoted');
    expect(g).toEqual([expect.objectContaining({ group: 'tenant' })]);
    expect(await q.counts()).toMatchObject({ pending: 2, dead: 0 });
  },
);
