import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { InjectQueue, type JobInfo, type WorkQueue } from '../src/index.js';
import { REPORTS, type ReportJob, type ReportResult } from './reports.js';

/** Body of `POST /reports`. */
export class CreateReportDto {
  @IsInt()
  @Min(1)
  @Max(1000)
  pages!: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(60_000)
  busyMs?: number;
}

/** Reports are rendered by ReportProcessor, in a sandbox. */
@Controller('reports')
export class ReportsController {
  constructor(@InjectQueue(REPORTS) private readonly reports: WorkQueue<ReportJob, ReportResult>) {}

  @Post()
  async create(@Body() body: CreateReportDto): Promise<{ id: string }> {
    const { id } = await this.reports.add({ pages: body.pages, busyMs: body.busyMs });
    return { id };
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<JobInfo<ReportJob, ReportResult>> {
    return (await this.reports.getJob(id)) ?? { id, state: 'unknown' };
  }
}
