// @InjectFlowProducer(name?): injects a flow producer registered with
// WorkQueueModule.registerFlowProducer().
import { Inject } from '@nestjs/common';
import { getFlowProducerToken } from '../utils/get-flow-producer-token.util.js';

/**
 * Injects the flow producer registered with `WorkQueueModule.registerFlowProducer({ name? })`:
 *
 * ```ts
 * constructor(@InjectFlowProducer() private readonly flows: FlowProducer) {}
 * ```
 */
export function InjectFlowProducer(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getFlowProducerToken(name));
}
