/**
 * Row "keepCompleted off": ours only, process c=50 with `keepCompleted: false` (completed jobs
 * removed at once, as before issue 25) — the `c50` row runs the default (the newest 1 000 kept
 * for a day), so the two side by side show what keeping costs.
 */
import type { Settings } from '../options.js';
import { baseParams, throughputRow, type RowPlan } from '../row.js';

export function keepCompletedPlan(s: Settings): RowPlan {
  return {
    measurements: [
      {
        id: 'c50KeepOff',
        kind: 'process',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), keepCompleted: false },
        libs: ['ours'],
      },
    ],
    rows: [
      throughputRow(
        'c50KeepOff',
        'keep',
        `process, c=${s.concurrency}, keepCompleted: false (ours; the c=${s.concurrency} row keeps the default 1 000)`,
        'c50KeepOff',
        { libs: ['ours'] },
      ),
    ],
  };
}
