// After a complete call: the flow children it completed wrote notices for their parents (in
// other queues, maybe other Cluster slots); deliver them now, beside the lease loop (tracked, so
// close() waits). What does not get through, clean() delivers (docs/internals/flows.md).
import type { CompleteItem } from '../queue/index.js';
import type { WorkerContext } from './context.js';
import type { Run } from './parts.js';

export function deliverFlowNotices<T, R>(
  ctx: WorkerContext<T, R>,
  items: ReadonlyArray<CompleteItem<R> & { run: Run<T> }>,
  completed: readonly boolean[],
): void {
  let seqs: string[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const lease = items[i]!.run.lease;
    if (lease.parent && completed[i]) (seqs ??= []).push(lease.seq);
  }
  if (seqs) void ctx.track(ctx.queue.deliverFlowNotices(seqs));
}
