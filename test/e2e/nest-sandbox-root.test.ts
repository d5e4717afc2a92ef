/**
 * A sandbox module that imports WorkQueueModule.forRoot() (its processor adds jobs) and the app's
 * feature module: the sandbox runs the processor and its queues, not what the app runs once —
 * no worker, no queue-events reader (each event was heard once more per sandbox), no cleaner
 * timer, no schedules applied (docs/sandboxes.md).
 */
import { threadId } from 'node:worker_threads';
import { afterAll, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { WorkQueueModule } from '../../src/index.js';
import {
  FOLLOWUPS,
  REPORTING_PREFIX,
  REPORTS,
  ReportEvents,
  reportingFeature,
  type SandboxView,
} from '../fixtures/sandbox/nest/reporting.processor.js';
import { testRedisUrl } from '../support/keys.js';
import { createNestApp, Inspector } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
afterAll(() => inspector.close());

it('a sandbox module importing forRoot(): its sandbox opens no event reader nor cleaner timer; each event is heard once, in the app', async () => {
  const prefix = inspector.track(REPORTING_PREFIX);
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
      reportingFeature(),
    ],
  })
  class AppModule {}
  const app = await createNestApp({ imports: [AppModule] });
  try {
    await app.init();
    const reports = inspector.queue(REPORTS, prefix);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await reports.add({ i })).id);
    const views = await waitFor(
      async () => {
        const jobs = await Promise.all(ids.map((id) => reports.getJob(id)));
        if (!jobs.every((j) => j?.state === 'completed')) return undefined;
        return jobs.map((j) => j!.result as SandboxView);
      },
      { timeoutMs: 20_000, what: '3 reports completed' },
    );
    // They ran in a sandbox thread, which ran none of the app's duties.
    for (const v of views) {
      expect(v.threadId).not.toBe(threadId);
      expect(v).toMatchObject({ cleanerIntervalMs: 0, eventReaders: 0 });
    }
    // The app's listener heard each completion once; the follow-ups the sandbox added are there.
    await waitFor(() => ReportEvents.heard.length >= 3, { what: "the app's listener heard 3" });
    expect([...ReportEvents.heard].sort()).toEqual([...ids].sort());
    expect((await inspector.queue(FOLLOWUPS, prefix).counts()).pending).toBe(3);
  } finally {
    await app.close();
  }
}, 40_000);
