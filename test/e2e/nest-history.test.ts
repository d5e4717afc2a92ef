// History in Nest (issue 25, item 9): @OnWorkerEvent methods get the job with its times (and the
// result); a processor's job logs, updates its data and puts itself back to sleep (DelayedError)
// — also the job a handler gets when 'progress' has listeners (a copy: its data follows).
import { afterAll, describe, expect, it } from '@jest/globals';
import { DelayedError, OnWorkerEvent, Process, Processor, type Job } from '../../src/index.js';
import { uniqueName } from '../support/keys.js';
import { Inspector, MemoryLogger, nestAppsClosedAfterEach } from '../support/nest-app.js';
import { appModule } from '../support/nest-events.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
const startApp = nestAppsClosedAfterEach();
afterAll(() => inspector.close());

interface Steps {
  step: number;
}

@Processor('mail')
class StepProcessor {
  readonly completed: Array<{ job: Job<Steps>; result: unknown }> = [];
  readonly progressed: number[] = [];
  /** job.data before and after updateData, as the handler's job shows it. */
  readonly updates: Array<[number, number]> = [];

  @Process()
  async run(job: Job<Steps>) {
    await job.progress(job.data.step);
    await job.log(`step ${job.data.step}`);
    if (job.data.step < 2) {
      const before = job.data.step;
      await job.updateData({ step: before + 1 });
      // The job given to the handler (a copy, as 'progress' has listeners) shows the new data.
      this.updates.push([before, job.data.step]);
      throw new DelayedError(10);
    }
    return { finalStep: job.data.step };
  }

  @OnWorkerEvent('progress')
  onProgress(_job: Job<Steps>, value: unknown) {
    this.progressed.push(value as number);
  }

  @OnWorkerEvent('completed')
  onCompleted(job: Job<Steps>, result: unknown) {
    this.completed.push({ job, result });
  }
}

describe('history in Nest', () => {
  it('step jobs, logs, and a completed event with the times and the result', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const app = await startApp({
      imports: [appModule(prefix, [StepProcessor], new MemoryLogger())],
    });
    const processor = app.get(StepProcessor);
    const queue = inspector.queue<Steps>('mail', prefix);
    const { id } = await queue.add({ step: 0 });
    await waitFor(() => processor.completed.length === 1, { what: 'the last step' });
    const [{ job, result }] = processor.completed as [{ job: Job<Steps>; result: unknown }];
    expect(result).toEqual({ finalStep: 2 });
    expect(job.data).toEqual({ step: 2 });
    expect(job.attempt).toBe(1);
    expect(job.startedAt).toBeGreaterThanOrEqual(job.addedAt);
    expect(job.finishedAt).toBeGreaterThanOrEqual(job.startedAt);
    expect(processor.progressed).toEqual([0, 1, 2]);
    expect(processor.updates).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect((await queue.getJobLogs(id)).lines).toEqual(['step 0', 'step 1', 'step 2']);
    expect(await queue.getJob(id)).toMatchObject({
      state: 'completed',
      data: { step: 2 },
      result: { finalStep: 2 },
      attemptsMade: 1,
    });
    // The worker is listed under its processor's name.
    const [worker] = await queue.getWorkers();
    expect(worker).toMatchObject({ name: 'StepProcessor', concurrency: 1 });
  });
});
