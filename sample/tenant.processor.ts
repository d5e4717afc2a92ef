import { Logger } from '@nestjs/common';
import { Process, Processor, type Job } from '../src/index.js';
import { TENANTS, type TenantJob, type TenantResult } from './tenants.js';

/** Consumes the `tenants` queue: each job belongs to its tenant's group (`job.group`). */
@Processor(TENANTS, { concurrency: 10 })
export class TenantProcessor {
  private readonly logger = new Logger(TenantProcessor.name);

  @Process()
  async import(job: Job<TenantJob>): Promise<TenantResult> {
    await new Promise((r) => setTimeout(r, job.data.workMs ?? 20));
    this.logger.debug(`tenant ${job.group} imported ${job.data.item}`);
    return { tenant: job.group!, item: job.data.item, doneAt: new Date().toISOString() };
  }
}
