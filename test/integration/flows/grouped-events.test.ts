/**
 * The events of grouped flow jobs carry their group, as every event of a grouped job's state
 * changes does (docs/groups.md): added, delayed and waiting-children as the flow is written, the
 * parent's delayed or promoted once its children ended, cancelled when a parent stops its
 * children. Ungrouped nodes of the same flow have none.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { QueueEvents, type QueueEvent } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture();
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

/** Every event of queue `name` from its start, as '<kind> <id>[@group]', until `close`. */
function record(name: string): { seen: string[]; close: () => Promise<void> } {
  const events = new QueueEvents(fx.client, name, { prefix: fx.prefix, from: '0' });
  const seen: string[] = [];
  events.on('event', (e: QueueEvent) =>
    seen.push(`${e.kind} ${e.id}${e.group ? `@${e.group}` : ''}`),
  );
  return { seen, close: () => events.close() };
}

describe('events of grouped flow jobs', () => {
  it('as the flow is written, and the parent delayed or promoted once its children ended', async () => {
    const flows = fx.producer();
    const rec = record('ge-q');
    try {
      await flows.addBulk([
        {
          queue: 'ge-q',
          data: 'p',
          id: 'late-parent',
          group: 'gp',
          delayMs: 60_000,
          children: [
            { queue: 'ge-q', data: 1, id: 'kid-1', group: 'gk' },
            { queue: 'ge-q', data: 2, id: 'kid-plain' },
            { queue: 'ge-q', data: 3, id: 'kid-later', group: 'gk', delayMs: 60_000 },
          ],
        },
        {
          queue: 'ge-q',
          data: 'p',
          id: 'parent',
          group: 'gp',
          children: [{ queue: 'ge-q', data: 4, id: 'kid-2', group: 'gk' }],
        },
      ]);
      const q = fx.queue('ge-q');
      await q.promote('kid-later');
      fx.worker('ge-q', () => 'ok');
      const has = (e: string) => () => rec.seen.some((s) => s.startsWith(e));
      await waitFor(has('delayed late-parent'), { what: 'the delayed parent' });
      await waitFor(has('completed parent'), { what: 'the parent to run' });
      const flowEvents = rec.seen.filter((e) =>
        /^(added|delayed|waiting-children|promoted) /.test(e),
      );
      // One queue, the deepest level first: the children, then the parents.
      expect(flowEvents.slice(0, 10)).toEqual([
        'added kid-1@gk',
        'added kid-plain',
        'added kid-later@gk',
        'added kid-2@gk',
        'delayed kid-later@gk',
        'added late-parent@gp',
        'added parent@gp',
        'waiting-children late-parent@gp',
        'waiting-children parent@gp',
        'promoted kid-later@gk',
      ]);
      // (The two parents' children end in either order.)
      expect(flowEvents.slice(10).sort()).toEqual(['delayed late-parent@gp', 'promoted parent@gp']);
    } finally {
      await rec.close();
    }
  });

  it('cancelled, when a cancelled parent stops its children', async () => {
    const flows = fx.producer();
    const rec = record('gc-kids');
    try {
      await flows.add({
        queue: 'gc-parent',
        data: 'p',
        id: 'cp',
        group: 'gp',
        children: [
          { queue: 'gc-kids', data: 1, id: 'ck-1', group: 'gk' },
          { queue: 'gc-kids', data: 2, id: 'ck-plain' },
          { queue: 'gc-kids', data: 3, id: 'ck-later', group: 'gk', delayMs: 60_000 },
        ],
      });
      expect(await fx.queue('gc-parent').cancel('cp')).toBe(true);
      await waitFor(() => rec.seen.filter((e) => e.startsWith('cancelled ')).length === 3, {
        what: 'the children cancelled',
      });
      expect(rec.seen.filter((e) => e.startsWith('cancelled ')).sort()).toEqual([
        'cancelled ck-1@gk',
        'cancelled ck-later@gk',
        'cancelled ck-plain',
      ]);
    } finally {
      await rec.close();
    }
  });
});
