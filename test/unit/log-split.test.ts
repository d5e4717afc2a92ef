// splitLogs: a batch of log lines split at a budget of call units (a renewal's share).
import { describe, expect, it } from '@jest/globals';
import { splitLogs } from '../../lib/job/logs.js';
import { lineUnits } from '../../lib/util/call-share.js';

describe('splitLogs', () => {
  const lines = ['a', 'bb', 'ccc'];
  const cost = (n: number) => lines.slice(0, n).reduce((s, l) => s + lineUnits(l), 0);

  it('all that fit; the dropped count goes with the first lines', () => {
    expect(splitLogs({ lines, dropped: 4 }, cost(3))).toEqual([{ lines, dropped: 4 }, undefined]);
    expect(splitLogs({ lines, dropped: 4 }, cost(2))).toEqual([
      { lines: ['a', 'bb'], dropped: 4 },
      { lines: ['ccc'], dropped: 0 },
    ]);
  });

  it('none fits: nothing taken, or only the dropped count', () => {
    expect(splitLogs({ lines, dropped: 0 }, 0)).toEqual([undefined, { lines, dropped: 0 }]);
    expect(splitLogs({ lines, dropped: 2 }, 0)).toEqual([
      { lines: [], dropped: 2 },
      { lines, dropped: 0 },
    ]);
  });
});
