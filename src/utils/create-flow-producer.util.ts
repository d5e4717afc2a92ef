// The flow producer of WorkQueueModule.registerFlowProducer(): the module's connection, prefix
// and logger, and its queue defaults for payloads and replica acks unless the registration sets
// them. A queue registered in the module encodes its nodes' payloads with its own codec and size
// limit; one registered on another connection or prefix is refused (its jobs, and the notices
// its children send their parents, would be on a Redis or prefix the flow is not on).
import { FlowProducer, type FlowProducerOptions } from '../../lib/internal.js';
import type { RegisterFlowProducerOptions } from '../interfaces/register-flow-producer-options.interface.js';
import type { WorkQueueContext } from '../work-queue.context.js';
import { flowQueueElsewhere } from '../work-queue.messages.js';

class ModuleFlowProducer extends FlowProducer {
  constructor(
    private readonly context: WorkQueueContext,
    options: FlowProducerOptions,
  ) {
    super(context.client, options);
  }

  protected override queueCheck(queue: string): ReturnType<FlowProducer['queueCheck']> {
    const unknown = super.queueCheck(queue);
    if (unknown !== undefined) return unknown;
    const q = this.context.getQueue(queue);
    if (!q) return undefined;
    if (q.client !== this.client || q.options.prefix !== this.options.prefix)
      return flowQueueElsewhere(queue);
    const own = q.options;
    const same =
      own.codec === this.options.codec && own.maxPayloadBytes === this.options.maxPayloadBytes;
    return same ? undefined : own;
  }
}

export function createFlowProducer(
  context: WorkQueueContext,
  registration: Omit<RegisterFlowProducerOptions, 'name'>,
): FlowProducer {
  const { codec, maxPayloadBytes, commandTimeoutMs, events, replicaAcks, replicaAckTimeoutMs } =
    context.queueDefaults;
  const options: FlowProducerOptions = {
    codec,
    maxPayloadBytes,
    commandTimeoutMs,
    events,
    replicaAcks,
    replicaAckTimeoutMs,
  };
  for (const k of Object.keys(options) as Array<keyof FlowProducerOptions>)
    if (options[k] === undefined) delete options[k];
  return new ModuleFlowProducer(context, {
    ...options,
    ...registration,
    prefix: context.prefix,
    logger: context.logger ?? false,
  });
}
