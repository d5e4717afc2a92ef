import { forwardRef, Injectable, Module } from '@nestjs/common';
import { Process, Processor, type Job } from '../src/index.js';
import type { ReportJob, ReportResult } from './reports.js';
import { REPORTS } from './reports.js';

/** Renders reports: CPU work that blocks the thread it runs on (a resize, a PDF, a parse). */
@Injectable()
export class ReportRenderer {
  render(job: ReportJob): ReportResult {
    const startedAt = Date.now();
    const until = startedAt + (job.busyMs ?? job.pages * 50);
    let checksum = 0;
    while (Date.now() < until) checksum = (checksum * 31 + job.pages) % 1_000_003;
    return { pages: job.pages, checksum, startedAt, endedAt: Date.now() };
  }
}

/**
 * Consumes the `reports` queue in worker threads: each boots ReportsModule (its own Nest
 * application context) and gets ReportRenderer injected, so a rendering never blocks the HTTP
 * requests or the email jobs of the app. See docs/sandboxes.md.
 */
@Processor(REPORTS, {
  concurrency: 2,
  sandbox: {
    module: forwardRef(() => ReportsModule),
    mode: 'thread',
    // The sample runs from TypeScript sources: its threads need the TypeScript loader too (a
    // built app needs no execArgv).
    execArgv: ['--import', new URL('../scripts/register-ts.mjs', import.meta.url).href],
  },
})
export class ReportProcessor {
  constructor(private readonly renderer: ReportRenderer) {}

  @Process()
  async render(job: Job<ReportJob>): Promise<ReportResult> {
    await job.progress('rendering');
    return this.renderer.render(job.data);
  }
}

/** What each sandbox of ReportProcessor boots (declared here, beside the processor). */
@Module({ providers: [ReportRenderer, ReportProcessor] })
export class ReportsModule {}
