// GET /schedules: the schedules of the emails queue (declared in AppModule), with their next and
// last fire times.
import { Controller, Get } from '@nestjs/common';
import { InjectQueue, type ScheduleInfo, type WorkQueue } from '../src/index.js';
import { EMAILS, type EmailJob, type EmailResult } from './emails.js';

@Controller('schedules')
export class SchedulesController {
  constructor(@InjectQueue(EMAILS) private readonly emails: WorkQueue<EmailJob, EmailResult>) {}

  /** Each schedule: spec, template, `nextFireAt` and `lastFireAt` (ms, Redis time), `ticks`. */
  @Get()
  list(): Promise<ScheduleInfo<EmailJob>[]> {
    return this.emails.listSchedules({ limit: 100 });
  }
}
