import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Post,
} from '@nestjs/common';
import { InjectQueue, WorkQueueError, type JobInfo, type WorkQueue } from '../src/index.js';
import { CreateJobDto } from './create-job.dto.js';
import { EMAILS, type EmailJob, type EmailResult } from './emails.js';

@Controller()
export class JobsController {
  constructor(@InjectQueue(EMAILS) private readonly emails: WorkQueue<EmailJob, EmailResult>) {}

  @Post('jobs')
  async create(@Body() body: CreateJobDto): Promise<{ id: string; added: boolean }> {
    return this.emails.add(body.data as EmailJob, {
      name: body.name,
      priority: body.priority,
      delayMs: body.delayMs,
      id: body.id,
    });
  }

  /**
   * A job in any state with its times (addedAt, startedAt, finishedAt: Redis ms), attempts, the
   * worker that ran it, its result, and its log (newest 100 lines).
   */
  @Get('jobs/:id')
  async get(@Param('id') id: string): Promise<JobInfo<EmailJob, EmailResult> & { logs: string[] }> {
    const info = await this.emails.getJob(id);
    if (!info) return { id, state: 'unknown', logs: [] };
    return { ...info, logs: await this.lastLines(id) };
  }

  /**
   * A job's newest 100 log lines; none once its logs went (a completed job known only by its
   * stored result or caller id: getJobLogs is NOT_FOUND).
   */
  private async lastLines(id: string): Promise<string[]> {
    try {
      const head = await this.emails.getJobLogs(id, { limit: 1 });
      return (await this.emails.getJobLogs(id, { offset: Math.max(0, head.count - 100) })).lines;
    } catch (e) {
      if (e instanceof WorkQueueError && e.code === 'NOT_FOUND') return [];
      throw e;
    }
  }

  @Delete('jobs/:id')
  async cancel(@Param('id') id: string): Promise<{ id: string; cancelled: true }> {
    if (!(await this.emails.cancel(id))) throw new NotFoundException(`no job ${id}`);
    return { id, cancelled: true };
  }

  @Get('queues')
  async queues(): Promise<Record<string, Awaited<ReturnType<WorkQueue['counts']>>>> {
    return { [EMAILS]: await this.emails.counts() };
  }

  @Get('dead')
  async dead() {
    return this.emails.listDead({ limit: 100 });
  }

  @Post('dead/:id/retry')
  @HttpCode(200)
  async retry(@Param('id') id: string): Promise<{ id: string; retried: true }> {
    if (!(await this.emails.retryDead(id))) throw new NotFoundException(`no dead job ${id}`);
    return { id, retried: true };
  }
}
