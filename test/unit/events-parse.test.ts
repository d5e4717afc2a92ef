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

  it('a "gs" trailer gives each job of its section its group, in order ("" = none)', () => {
    const fields = ['e', 'active', 'w', '9', 'T', '100', 'n', '1 2', 'i', 'x y', 'n', '3'];
    fields.push('tm', '5 6 7 8');
    fields.push('gs', JSON.stringify(['t 1', '', 'a"b', 't 1']));
    fields.push('e', 'completed', 'n', '4', 'gs', '["u"]', 'e', 'added', 'n', '5');
    const events = parseEntry('5-1', fields);
    expect(events.map((e) => [e.kind, e.id, e.group])).toEqual([
      ['active', '1', 't 1'],
      ['active', '2', undefined],
      ['active', 'x y', 'a"b'],
      ['active', '3', 't 1'],
      ['completed', '4', 'u'],
      ['added', '5', undefined],
    ]);
    // The times trailer still applies beside it.
    expect(events[3]).toMatchObject({ addedAt: 92, workerId: '9' });
    expect('group' in events[1]!).toBe(false);
  });
});
