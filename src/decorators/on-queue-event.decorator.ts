// @OnQueueEvent(kind): a method of a @QueueEventsListener() class called on each event of that
// kind in the queue's event log.
import type { QueueEventKind, QueueEventOf } from '../../lib/internal.js';
import { WORK_QUEUE_QUEUE_EVENT_METADATA } from '../work-queue.constants.js';
import { appendMethodMetadata } from './append-metadata.js';

/** Every event kind of the event log, for validation at bootstrap. */
export const QUEUE_EVENT_KINDS = [
  'added',
  'delayed',
  'promoted',
  'waiting-children',
  'active',
  'progress',
  'completed',
  'failed',
  'dead',
  'cancelled',
  'reclaimed',
  'released',
] as const satisfies readonly QueueEventKind[];

/** Compile-time check that QUEUE_EVENT_KINDS names every kind (never when one is missing). */
export type MissingQueueEventKind = Exclude<QueueEventKind, (typeof QUEUE_EVENT_KINDS)[number]>;
const complete: [MissingQueueEventKind] extends [never] ? true : false = true;
void complete;

/**
 * Calls the decorated method of a `@QueueEventsListener()` class with each event of `kind`,
 * from every process (`{ kind, id, eventId, at, ...fields }`, see "Events across processes"):
 *
 * ```ts
 * @OnQueueEvent('failed')
 * failed(e: QueueEventOf<'failed'>) { console.warn(e.id, e.attempt, e.error); }
 * ```
 *
 * Methods are called in the log's order, without waiting for one another; a method that throws
 * or rejects is logged, never fatal.
 */
export function OnQueueEvent<K extends QueueEventKind>(kind: K) {
  return <M extends { bivariant(event: QueueEventOf<K>): unknown }['bivariant']>(
    _target: object,
    _key: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): void => appendMethodMetadata(WORK_QUEUE_QUEUE_EVENT_METADATA, kind, descriptor.value);
}
