// The event log's entry format (lib/scripts/lib/events.lua) as the reader decodes it: one
// section per entry (older entries) and several sections with 'n' id lists give the same events.
import { describe, expect, it } from '@jest/globals';
import { parseEntry } from '../../lib/events/parse.js';

describe('parseEntry', () => {
  it('one section, one "i" field per job (the format of one kind per entry)', () => {
    const events = parseEntry('1700000000000-0', ['e', 'active', 'w', '7', 'i', '1', 'i', 'a b']);
    expect(events).toEqual([
      { kind: 'active', id: '1', workerId: '7', eventId: '1700000000000-0', at: 1700000000000 },
      { kind: 'active', id: 'a b', workerId: '7', eventId: '1700000000000-0', at: 1700000000000 },
    ]);
  });

  it('several sections: each has its own kind and fields; "n" lists ids in order', () => {
    const fields = ['e', 'completed', 'r', '1', 'n', '4 5', 'i', 'x y', 'n', '6'];
    fields.push('e', 'active', 'w', '9', 'n', '7 8');
    fields.push('e', 'failed', 'i', '3', 'a', '2', 'r', '0', 'err', 'boom');
    const events = parseEntry('5-1', fields);
    expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
      'completed 4',
      'completed 5',
      'completed x y',
      'completed 6',
      'active 7',
      'active 8',
      'failed 3',
    ]);
    expect(events[0]).toMatchObject({ resultStored: true });
    expect(events[4]).toMatchObject({ workerId: '9' });
    // A section's fields do not leak into the next one.
    expect(events[6]).toEqual({
      kind: 'failed',
      id: '3',
      attempt: 2,
      retried: false,
      error: 'boom',
      eventId: '5-1',
      at: 5,
    });
  });
});
