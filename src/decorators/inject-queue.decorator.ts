// @InjectQueue(name): injects a queue registered with WorkQueueModule.registerQueue().
import { Inject } from '@nestjs/common';
import { getQueueToken } from '../utils/get-queue-token.util.js';

/**
 * Injects the queue registered with `WorkQueueModule.registerQueue({ name })`:
 *
 * ```ts
 * constructor(@InjectQueue('emails') private readonly emails: WorkQueue<EmailJob>) {}
 * ```
 */
export function InjectQueue(name: string): PropertyDecorator & ParameterDecorator {
  return Inject(getQueueToken(name));
}
