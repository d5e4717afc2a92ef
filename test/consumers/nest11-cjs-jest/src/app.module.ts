import { Controller, Get, Injectable, Module, Post, Query } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  InjectQueue,
  Process,
  Processor,
  WorkQueueModule,
  type Job,
  type WorkQueue,
} from 'nestjs-work-queue';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from 'nestjs-work-queue/health';

export interface EmailJob {
  to: string;
}

@Injectable()
export class Mailer {
  async send(to: string, subject: string, opts: { signal: AbortSignal }): Promise<void> {
    void [to, subject, opts]; // a real mailer sends here, and stops when the signal aborts
  }
}

@Processor('emails', { concurrency: 10 })
export class EmailProcessor {
  constructor(private readonly mailer: Mailer) {}

  @Process('welcome') // jobs added with { name: 'welcome' }
  async welcome(job: Job<EmailJob>): Promise<void> {
    await this.mailer.send(job.data.to, 'Welcome!', { signal: job.signal });
  } // return = completed; throw = failed (retried with backoff, then dead-lettered)

  @Process() // every other job of the queue
  async other(job: Job<EmailJob>): Promise<void> {
    const subject = `About ${job.name ?? 'your account'}`;
    await this.mailer.send(job.data.to, subject, { signal: job.signal });
  }
}

@Controller()
export class SignupController {
  constructor(@InjectQueue('emails') private readonly emails: WorkQueue<EmailJob>) {}

  @Post('signup')
  signUp(@Query('email') to: string) {
    // A caller id dedupes: one welcome email while it waits, runs, and 60 s after (dedupeWindowMs).
    return this.emails.add({ to }, { name: 'welcome', id: `welcome:${to}` });
  }
}

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: WorkQueueHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.queues.isHealthy('queues', { maxDead: 100, minWorkers: 1 }),
    ]);
  }
}

@Module({
  imports: [
    WorkQueueModule.forRoot({
      connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    }),
    WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 5 }),
    TerminusModule,
    WorkQueueHealthModule,
  ],
  controllers: [SignupController, HealthController],
  providers: [EmailProcessor, Mailer],
})
export class AppModule {}
