/** The queue: its public front and the types of the lease protocol. */
export { WorkQueue } from './work-queue.js';
export type { CompleteItem, LeaseBatch, WorkerCallOptions } from './lease-types.js';
