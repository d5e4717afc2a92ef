// The flow producer of WorkQueueModule.registerFlowProducer(): the module's connection, prefix
// and logger, and its queue defaults for payloads and replica acks unless the registration sets
// them.
import { FlowProducer, type FlowProducerOptions } from '../../lib/internal.js';
import type { RegisterFlowProducerOptions } from '../interfaces/register-flow-producer-options.interface.js';
import type { WorkQueueContext } from '../work-queue.context.js';

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
  return new FlowProducer(context.client, {
    ...options,
    ...registration,
    prefix: context.prefix,
    logger: context.logger ?? false,
  });
}
