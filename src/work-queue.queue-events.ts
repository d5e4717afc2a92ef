// Runs the @QueueEventsListener() classes: one QueueEvents reader per queue for the whole app,
// opened at bootstrap, closed at shutdown; each event goes to the @OnQueueEvent() methods of
// its kind. Internal.
import { insideSandbox } from './sandbox/sandbox-options.js';
import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { errorMessage, QueueEvents, WorkQueueError, type QueueEvent } from '../lib/internal.js';
import { callListener } from './utils/listener-method.util.js';
import { WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import { WorkQueueContext } from './work-queue.context.js';
import { WorkQueueEventsExplorer, type QueueListeners } from './work-queue-events.explorer.js';
import {
  methodName,
  queueEventListenerFailed,
  queueEventsReadFailed,
  queueEventsStarted,
  queueEventsStartTimeout,
} from './work-queue-events.messages.js';

/**
 * Collects the listeners in `onModuleInit` (bad ones fail the bootstrap, every problem listed),
 * opens one reader per queue in `onApplicationBootstrap` and waits until it knows where the log
 * ends (every event logged after the bootstrap is heard), closes the readers in
 * `beforeApplicationShutdown`. A method that throws or rejects is logged; read failures are
 * retried by the reader (logged at debug level: the connection's loss is logged already).
 */
@Injectable()
export class WorkQueueQueueEvents
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private listeners: QueueListeners[] = [];
  private readonly readers: QueueEvents[] = [];
  private closing: Promise<void> | undefined;

  constructor(
    private readonly explorer: WorkQueueEventsExplorer,
    private readonly context: WorkQueueContext,
  ) {
    context.onBootstrapFailure(() => this.beforeApplicationShutdown());
  }

  /** @internal How many readers are open (one per queue with listeners); for tests. */
  get openReaders(): number {
    return this.readers.length;
  }

  onModuleInit(): void {
    this.listeners = this.explorer.explore().queueEvents;
  }

  async onApplicationBootstrap(): Promise<void> {
    // (app.close() during app.init() may have run the shutdown hook first: open nothing then.
    // A processor's sandbox hears nothing: the app's readers do, once.)
    if (this.closing || insideSandbox()) return;
    try {
      await Promise.all(this.listeners.map((l) => this.open(l)));
    } catch (e) {
      this.context.bootstrapFailed();
      throw e;
    }
  }

  beforeApplicationShutdown(): Promise<void> {
    this.closing ??= Promise.all(this.readers.splice(0).map((r) => r.close())).then(
      () => undefined,
    );
    return this.closing;
  }

  private async open({ queue, classNames, methods }: QueueListeners): Promise<void> {
    const log = this.context.logger;
    const reader = new QueueEvents(queue.client, queue.name, {
      prefix: queue.options.prefix,
      commandTimeoutMs: queue.options.commandTimeoutMs,
    });
    this.readers.push(reader); // closed at shutdown even if the bootstrap fails below
    let lastError: string | undefined;
    reader.on('error', (e) => {
      lastError = errorMessage(e);
      log?.debug?.(queueEventsReadFailed(queue.name, lastError));
    });
    reader.on('event', (e: QueueEvent) => {
      for (const m of methods.get(e.kind) ?? []) {
        callListener(m, [e], (err) =>
          log?.error(
            queueEventListenerFailed(
              queue.name,
              methodName(m.className, m.methodName),
              e.kind,
              errorMessage(err),
            ),
          ),
        );
      }
    });
    const ms = WORK_QUEUE_MODULE_DEFAULTS.startTimeoutMs;
    if (!(await reader.ready(ms))) {
      throw new WorkQueueError(
        'REDIS_UNAVAILABLE',
        queueEventsStartTimeout(queue.name, ms, lastError),
      );
    }
    log?.log(queueEventsStarted(queue.name, classNames));
  }
}
