// Calls a processor's @OnWorkerEvent() methods: the Worker's own events, plus 'active' and
// 'progress', which the module tells itself since it calls the handlers. Internal.
import type { LoggerService } from '@nestjs/common';
import { errorMessage, type Job, type Worker } from '../lib/internal.js';
import type { WorkerEventName } from './decorators/on-worker-event.decorator.js';
import { callListener } from './utils/listener-method.util.js';
import type { WorkerEventMethods } from './work-queue-events.explorer.js';
import { methodName, workerEventListenerFailed } from './work-queue-events.messages.js';

/** Events the module tells (the core Worker has no such event). */
const MODULE_EVENTS: ReadonlySet<WorkerEventName> = new Set(['active', 'progress']);

/** The `@OnWorkerEvent()` methods of one queue's processors, wired to its worker. */
export class WorkerEventHooks {
  constructor(
    private readonly queueName: string,
    private readonly methods: WorkerEventMethods,
    private readonly logger: LoggerService | undefined,
  ) {}

  /** Listen to the worker's own events (one listener per event that has methods). */
  attach(worker: Worker): void {
    const on = worker.on.bind(worker) as (event: string, fn: (...a: unknown[]) => void) => void;
    for (const event of this.methods.keys()) {
      if (!MODULE_EVENTS.has(event)) on(event, (...args) => this.emit(event, args));
    }
  }

  /**
   * A handler is about to run `job`: tell 'active', and give the handler a job whose
   * `progress()` tells 'progress' once recorded — a view of the same job (every other property,
   * own or made on first read like `log` and `updateData`, and `data` after `updateData`, is the
   * job's); only when 'progress' has methods.
   */
  started(job: Job): Job {
    this.emit('active', [job]);
    if (!this.methods.has('progress')) return job;
    const progress = async (value: unknown): Promise<boolean> => {
      const recorded = await job.progress(value);
      if (recorded) this.emit('progress', [told, value]);
      return recorded;
    };
    // (Accessors run on the job itself: its data and signal are getters over private fields.)
    const told: Job = new Proxy(job, {
      get: (target, key) => (key === 'progress' ? progress : Reflect.get(target, key, target)),
      set: (target, key, value) => Reflect.set(target, key, value, target),
    });
    return told;
  }

  private emit(event: WorkerEventName, args: readonly unknown[]): void {
    for (const m of this.methods.get(event) ?? []) {
      callListener(m, args, (e) =>
        this.logger?.error(
          workerEventListenerFailed(
            this.queueName,
            methodName(m.className, m.methodName),
            event,
            errorMessage(e),
          ),
        ),
      );
    }
  }
}
