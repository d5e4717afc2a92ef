// Hears the emails queue's events from every instance (the event log): logs dead letters and
// counts outcomes — e.g. for a dashboard — whichever instance ran the job.
import { Logger } from '@nestjs/common';
import { OnQueueEvent, QueueEventsListener, type QueueEventOf } from '../src/index.js';
import { EMAILS } from './emails.js';

@QueueEventsListener(EMAILS)
export class EmailEventsListener {
  private readonly logger = new Logger(EmailEventsListener.name);
  /** Outcomes heard since this instance started, across all instances. */
  readonly heard = { completed: 0, failed: 0, dead: 0 };

  @OnQueueEvent('completed')
  completed(): void {
    this.heard.completed++;
  }

  @OnQueueEvent('failed')
  failed(e: QueueEventOf<'failed'>): void {
    this.heard.failed++;
    this.logger.debug(`email ${e.id} attempt ${e.attempt} failed: ${e.error}`);
  }

  @OnQueueEvent('dead')
  dead(e: QueueEventOf<'dead'>): void {
    this.heard.dead++;
    this.logger.warn(`email ${e.id} dead-lettered: ${e.reason}`);
  }
}
