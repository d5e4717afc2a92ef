// getFlowProducerToken(name): the injection token of a registered flow producer.
import { WORK_QUEUE_FLOW_PRODUCER_TOKEN_PREFIX } from '../work-queue.constants.js';

/** Injection token of a registered flow producer: `FlowProducer:default`, `FlowProducer:<name>`. */
export function getFlowProducerToken(name = 'default'): string {
  return `${WORK_QUEUE_FLOW_PRODUCER_TOKEN_PREFIX}${name}`;
}
