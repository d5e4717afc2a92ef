// GET /jobs/:id/result?timeoutMs=: waits for a job's outcome (queue.waitForResult) and answers
// with the processor's result; the emails queue keeps results (storeResults).
import {
  ConflictException,
  Controller,
  Get,
  GatewayTimeoutException,
  NotFoundException,
  Param,
  Query,
} from '@nestjs/common';
import { InjectQueue, JobOutcomeError, WorkQueueError, type WorkQueue } from '../src/index.js';
import { EMAILS, type EmailJob, type EmailResult } from './emails.js';

@Controller('jobs')
export class ResultsController {
  constructor(@InjectQueue(EMAILS) private readonly emails: WorkQueue<EmailJob, EmailResult>) {}

  /**
   * 200 with the result once the job completed (at once if it already had), 409 when it was
   * dead-lettered, or cancelled while this waited, 404 when there is no such job (a job
   * cancelled before is gone), 504 after `timeoutMs` (default 10 000), 400 for a bad
   * `timeoutMs`.
   */
  @Get(':id/result')
  async result(
    @Param('id') id: string,
    @Query('timeoutMs') timeoutMs = '10000',
  ): Promise<{ id: string; result: EmailResult | null }> {
    try {
      const result = await this.emails.waitForResult(id, { timeoutMs: Number(timeoutMs) });
      return { id, result: result ?? null };
    } catch (e) {
      if (e instanceof JobOutcomeError) throw new ConflictException(e.message);
      if (!(e instanceof WorkQueueError)) throw e;
      if (e.code === 'TIMEOUT') throw new GatewayTimeoutException(e.message);
      if (e.code === 'NOT_FOUND') throw new NotFoundException(e.message);
      throw e;
    }
  }
}
