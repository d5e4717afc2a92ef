/**
 * A lease of the reference model while a group is ready (test/support/model/model.ts): the
 * grouped branch of lease_jobs (lib/scripts/lib/leasing.lua), batch by batch (group_pop), each
 * batch checked for tombstones and suspects as lease_jobs does.
 */
import type { GroupLease, Groups } from './groups.js';
import type { ModelJob } from './types.js';

/** The seqs leased (their groups' running counts updated); the caller marks them leased. */
export function leaseFromGroups(
  groups: Groups,
  gl: GroupLease,
  count: number,
  holds: boolean,
  lists: string[][],
  jobOf: (seq: string) => ModelJob | undefined,
): string[] {
  const out: string[] = [];
  let stopped = false;
  while (out.length < count && !stopped) {
    const popped: Array<[string, number]> = [];
    groups.pop(gl, count - out.length, lists, popped);
    if (popped.length === 0) break;
    const left: Array<[string, number] | null> = [...popped];
    popped.forEach(([seq], i) => {
      if (stopped) return;
      const job = jobOf(seq);
      if (job?.suspect) {
        // Runs alone: only as the first job of a batch, for a caller that holds nothing.
        if (out.length === 0 && !holds) {
          out.push(seq);
          left[i] = null;
        }
        stopped = true;
      } else {
        if (job) out.push(seq); // else a tombstone: dropped
        left[i] = null;
      }
    });
    if (stopped) {
      // Back first in line, in order (walked backwards).
      for (let i = left.length - 1; i >= 0; i--) {
        const e = left[i];
        if (e && !groups.putBack(gl, e[0], i + 1)) lists[e[1]]!.unshift(e[0]);
      }
    }
  }
  groups.commit(gl, out);
  return out;
}
