// Queue administration over HTTP: queue-wide pause/resume, paged job listings, the groups of a
// queue, promoting a delayed job. Queues are found by name among those the app registered.
import { Controller, Get, HttpCode, NotFoundException, Param, Post, Query } from '@nestjs/common';
import {
  WorkQueueContext,
  type GroupInfo,
  type JobInfo,
  type ListState,
  type Metrics,
  type MetricsKind,
  type WorkQueue,
} from '../src/index.js';

const KINDS: readonly MetricsKind[] = ['completed', 'failed', 'dead'];

@Controller()
export class QueuesController {
  constructor(private readonly context: WorkQueueContext) {}

  /** Every worker of the queue, in every instance, stops leasing; running jobs finish. */
  @Post('queues/:name/pause')
  @HttpCode(200)
  async pause(@Param('name') name: string): Promise<{ queue: string; paused: boolean }> {
    const queue = this.queue(name);
    await queue.pause();
    return { queue: name, paused: await queue.isPaused() };
  }

  @Post('queues/:name/resume')
  @HttpCode(200)
  async resume(@Param('name') name: string): Promise<{ queue: string; paused: boolean }> {
    const queue = this.queue(name);
    await queue.resume();
    return { queue: name, paused: await queue.isPaused() };
  }

  /**
   * `?state=pending|delayed|leased|dead&offset=0&limit=100`: one page of jobs in that state.
   * Bad input is 400 with every problem, as the core words them (sample/http-errors.ts).
   */
  @Get('queues/:name/jobs')
  async jobs(
    @Param('name') name: string,
    @Query('state') state?: string,
    @Query('offset') offset?: string,
    @Query('limit') limit?: string,
  ): Promise<JobInfo[]> {
    return this.queue(name).getJobs(state as ListState, {
      offset: queryInt(offset),
      limit: queryInt(limit),
    });
  }

  /**
   * `?offset=0&limit=100`: one page of the queue's groups (docs/groups.md) with their pending and
   * running jobs, paused and rate-limited state.
   */
  @Get('queues/:name/groups')
  async groups(
    @Param('name') name: string,
    @Query('offset') offset?: string,
    @Query('limit') limit?: string,
  ): Promise<GroupInfo[]> {
    return this.queue(name).getGroups({ offset: queryInt(offset), limit: queryInt(limit) });
  }

  /**
   * The last hour per minute (Redis time): completed jobs, failed attempts that were retried,
   * dead-lettered jobs; minutes without any are left out.
   */
  @Get('queues/:name/metrics')
  async metrics(@Param('name') name: string): Promise<Record<MetricsKind, Metrics>> {
    const queue = this.queue(name);
    const sinceMs = Date.now() - 3_600_000;
    const [completed, failed, dead] = await Promise.all(
      KINDS.map((kind) => queue.getMetrics(kind, { sinceMs })),
    );
    return { completed: completed!, failed: failed!, dead: dead! };
  }

  /** Run a delayed job now, on whichever of the app's queues holds it. */
  @Post('jobs/:id/promote')
  @HttpCode(200)
  async promote(@Param('id') id: string): Promise<{ id: string; queue: string; promoted: true }> {
    for (const queue of this.context.queues) {
      if (await queue.promote(id)) return { id, queue: queue.name, promoted: true };
    }
    throw new NotFoundException(`no delayed job ${id}`);
  }

  private queue(name: string): WorkQueue {
    const queue = this.context.getQueue(name);
    if (!queue) throw new NotFoundException(`no queue ${name}`);
    return queue;
  }
}

/**
 * A query parameter as a number when it is an integer; otherwise left as given (typed as a
 * number for the call), so that the core's problem quotes what was sent.
 */
function queryInt(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  return (/^-?\d+$/.test(value) ? Number(value) : value) as number;
}
