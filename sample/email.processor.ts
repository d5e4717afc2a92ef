import { Logger } from '@nestjs/common';
import { NonRetryableError, Process, Processor, type Job } from '../src/index.js';
import { EMAILS, type EmailJob, type EmailResult } from './emails.js';

/** Consumes the `emails` queue: `welcome` and `digest` jobs, and a catch-all for the rest. */
@Processor(EMAILS, { concurrency: 10 })
export class EmailProcessor {
  private readonly logger = new Logger(EmailProcessor.name);

  @Process('welcome')
  async welcome(job: Job<EmailJob>): Promise<EmailResult> {
    await job.log(`welcome email to ${redact(recipient(job))}`);
    await pause(20, job.signal);
    this.logger.debug(`welcome email ${job.id} sent to ${redact(job.data.to)}`);
    return { messageId: `welcome-${job.id}`, sentAt: new Date().toISOString() };
  }

  /** A longer send that reports progress and can fail (and is then retried with backoff). */
  @Process('digest')
  async digest(job: Job<EmailJob>): Promise<EmailResult> {
    for (let step = 1; step <= 4; step++) {
      await pause(25, job.signal);
      await job.progress(step / 4);
      await job.log(`digest part ${step}/4 rendered`);
    }
    if (job.data.alwaysFail || job.attempt <= (job.data.failTimes ?? 0)) {
      throw new Error(`mail server refused the digest (attempt ${job.attempt})`);
    }
    // Scheduled ones have the id `digest:<tick ms>`.
    this.logger.log(`digest ${job.id} sent on attempt ${job.attempt}`);
    return { messageId: `digest-${job.id}`, sentAt: new Date().toISOString() };
  }

  @Process()
  async other(job: Job<EmailJob>): Promise<EmailResult> {
    await job.log(`sending ${job.name ?? 'an unnamed email'} to ${redact(recipient(job))}`);
    await pause(5, job.signal);
    this.logger.debug(`email ${job.id} (${job.name ?? 'unnamed'}) sent`);
    return { messageId: `mail-${job.id}`, sentAt: new Date().toISOString() };
  }
}

/** Wait `ms`, or reject as soon as the job's signal aborts (lease lost, cancelled, shutdown). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/**
 * The job's address. Without one no attempt can succeed: NonRetryableError dead-letters the job
 * at once with this reason (POST /jobs takes any JSON as data).
 */
function recipient(job: Job<EmailJob>): string {
  const to = (job.data as Partial<EmailJob> | null)?.to;
  if (typeof to !== 'string' || !to.includes('@')) {
    throw new NonRetryableError('data.to must be an email address');
  }
  return to;
}

/** Addresses are personal data: log the domain only. */
function redact(address: string): string {
  return `***@${address.split('@')[1] ?? '?'}`;
}
