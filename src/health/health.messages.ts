// The messages of nestjs-work-queue/health (readiness, liveness): what the indicator says.

export const redisStatusUnreachable = (status: string) =>
  `Redis is unreachable (connection ${status})`;
export const redisUnreachable = (error: string) => `Redis is unreachable: ${error}`;
export const redisNoAnswer = (ms: number) => `Redis did not answer within ${ms} ms`;
export const healthQueueNotRegistered = (queue: string) => `queue "${queue}" is not registered`;
export const evictionWarning = (policy: string) =>
  `maxmemory-policy is '${policy}': Redis may evict queue keys and lose jobs; set it to noeviction`;
export const tooManyPending = (queue: string, n: number, max: number) =>
  `queue "${queue}": ${n} pending jobs, over maxPending ${max}`;
export const tooManyDead = (queue: string, n: number, max: number) =>
  `queue "${queue}": ${n} dead jobs, over maxDead ${max}`;
export const tooFewWorkers = (queue: string, n: number, min: number) =>
  `queue "${queue}": ${n} live workers, under minWorkers ${min}`;
export const INVALID_LIVENESS_OPTIONS = 'invalid isAlive() options';
export const INVALID_READINESS_OPTIONS = 'invalid isHealthy() options';
export const livenessOptionsNotObject = (got: string) =>
  `options must be an object { stalledAfterMs?, timeoutMs? }, got ${got}`;
export const badLivenessMs = (key: string, got: string) =>
  `${key} must be a positive integer (ms) up to 2147483647, got ${got}`;
export const MAIN_CONNECTION = 'the Redis connection';
export const queuesConnection = (queues: readonly string[]) =>
  `the Redis connection of ${queues.length > 1 ? 'queues' : 'queue'} ${queues.map((q) => `"${q}"`).join(', ')}`;
export const unreachableFor = (connection: string, ms: number) =>
  `${connection} has not reached Redis for ${ms} ms`;
export const workerStalled = (queue: string, pending: number, ms: number) =>
  `queue "${queue}": ${pending} jobs pending while its worker's lease calls have gone unanswered for ${ms} ms`;
export const heartbeatLost = (queue: string, ms: number) =>
  `queue "${queue}": its worker's heartbeat thread died ${ms} ms ago and has not been replaced (beating from the main thread meanwhile)`;
