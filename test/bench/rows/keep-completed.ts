/**
 * Row "keep": process c=50 with the newest 1 000 completed jobs kept for a day — ours' default
 * `keepCompleted`, BullMQ's `removeOnComplete: { count: 1000, age: 86400 }` (Bee-Queue has no
 * such option). Every other row removes completed jobs in every library, so the two rows side by
 * side show what keeping costs.
 */
import type { Settings } from '../options.js';
import { baseParams, throughputRow, type RowPlan } from '../row.js';

export function keepCompletedPlan(s: Settings): RowPlan {
  return {
    measurements: [
      {
        id: 'c50Keep',
        kind: 'process',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), keepCompleted: true },
        libs: ['ours', 'bullmq'],
      },
    ],
    rows: [
      throughputRow(
        'c50Keep',
        'keep',
        `process, c=${s.concurrency}, the newest 1 000 completed jobs kept (ours' default; BullMQ removeOnComplete { count: 1000 })`,
        'c50Keep',
        { libs: ['ours', 'bullmq'] },
      ),
    ],
  };
}
