// @QueueEventsListener(queue): a provider class whose @OnQueueEvent() methods hear the queue's
// event log (every process).
import { SetMetadata } from '@nestjs/common';
import { WORK_QUEUE_EVENTS_LISTENER_METADATA } from '../work-queue.constants.js';

/** What `@QueueEventsListener()` records on a class. */
export interface QueueEventsListenerMetadata {
  readonly queueName: string;
}

/**
 * Marks a provider class as a listener of a queue's events, from every process and instance:
 * its `@OnQueueEvent(kind)` methods are called for each event of that kind. The application
 * reads the queue's event log with one shared `QueueEvents` per queue, opened at bootstrap and
 * closed at shutdown. The queue must be registered (`registerQueue`) and keep its event log; the
 * class must be a singleton provider.
 *
 * ```ts
 * @QueueEventsListener('emails')
 * export class EmailEvents {
 *   @OnQueueEvent('completed') completed(e: QueueEventOf<'completed'>) { ... }
 * }
 * ```
 */
export function QueueEventsListener(queueName: string): ClassDecorator {
  const metadata: QueueEventsListenerMetadata = { queueName };
  return SetMetadata(WORK_QUEUE_EVENTS_LISTENER_METADATA, metadata);
}
