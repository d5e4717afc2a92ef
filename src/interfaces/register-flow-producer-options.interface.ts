// The options of WorkQueueModule.registerFlowProducer().
import type { FlowProducerOptions } from '../../lib/internal.js';

/**
 * A flow producer (docs/flows.md) on the module's connection and prefix, provided under
 * `getFlowProducerToken(name)` for `@InjectFlowProducer(name)`. It uses the module's queue
 * defaults (`codec`, `maxPayloadBytes`, `events`, `commandTimeoutMs`, `replicaAcks`,
 * `replicaAckTimeoutMs`) unless set here — but a node of a queue registered in the module has
 * its payload encoded with that queue's own `codec` and `maxPayloadBytes`. `queues` lists the
 * queues its flows may name (any other is refused as unknown).
 */
export interface RegisterFlowProducerOptions extends Omit<
  FlowProducerOptions,
  'prefix' | 'logger'
> {
  /** Several producers may be registered under names. Default `'default'`. */
  name?: string;
}
