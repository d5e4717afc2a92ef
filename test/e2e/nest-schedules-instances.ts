// App instances for the declared-schedule tests (nest-schedules.test.ts,
// nest-schedules-bootstrap.test.ts): each registers the queue with the schedules given and (by
// default) a processor that records every tick it runs.
import { afterAll, afterEach } from '@jest/globals';
import { Module, type INestApplication } from '@nestjs/common';
import {
  Process,
  Processor,
  WorkQueueModule,
  type Job,
  type RegisterQueueOptions,
  type WorkQueueModuleOptions,
} from '../../src/index.js';
import { testRedisUrl } from '../support/keys.js';
import { createNestApp, Inspector, MemoryLogger } from '../support/nest-app.js';

export const QUEUE = 'ticks';

export interface Seen {
  id: string;
  /** The tick's time, from its id `<schedule>:<tick ms>`. */
  tick: number;
  data: unknown;
  instance: string;
  /** When the handler started. */
  at: number;
}

/**
 * startInstance() and stop() for one test file, and an Inspector (closed after the file's tests):
 * every instance started is stopped after each test.
 */
export function scheduleInstances() {
  const inspector = new Inspector();
  const running = new Set<INestApplication>();
  afterEach(async () => {
    await Promise.all([...running].map((a) => stop(a)));
  });
  afterAll(() => inspector.close());

  async function stop(app: INestApplication): Promise<void> {
    running.delete(app);
    await app.close();
  }

  /** One app instance: the queue with `registration`, and a processor recording into `seen`. */
  async function startInstance(
    instance: string,
    prefix: string,
    registration: Omit<RegisterQueueOptions, 'name'>,
    seen: Seen[],
    {
      connection = { url: testRedisUrl() } as WorkQueueModuleOptions['connection'],
      logger = new MemoryLogger(),
      processor = true,
      cleaner = {} as WorkQueueModuleOptions['cleaner'],
      /** How long each job works (simulated), so that one worker alone cannot keep up. */
      workMs = 0,
    } = {},
  ) {
    @Processor(QUEUE)
    class TickProcessor {
      @Process()
      async tick(job: Job) {
        const at = Date.now();
        if (workMs > 0) await new Promise((r) => setTimeout(r, workMs));
        seen.push({
          id: job.id,
          tick: Number(job.id.split(':').pop()),
          data: job.data,
          instance,
          at,
        });
      }
    }
    @Module({
      imports: [
        WorkQueueModule.forRoot({ connection, prefix, logger, cleaner }),
        WorkQueueModule.registerQueue({ name: QUEUE, ...registration }),
      ],
      providers: processor ? [TickProcessor] : [],
    })
    class AppModule {}
    const app = await createNestApp({ imports: [AppModule] });
    running.add(app); // closed after the test even if init fails
    await app.init();
    return { app, logger };
  }

  return { inspector, startInstance, stop };
}

/** The ticks from the first seen to the last seen, each one seen. */
export function contiguous(seen: readonly Seen[], every: number): boolean {
  const ticks = new Set(seen.map((s) => s.tick));
  const sorted = [...ticks].sort((a, b) => a - b);
  return sorted.every((t, i) => i === 0 || t - sorted[i - 1]! === every);
}

export function timesEach(seen: readonly Seen[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const s of seen) n.set(s.id, (n.get(s.id) ?? 0) + 1);
  return n;
}
