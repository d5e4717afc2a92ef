/**
 * The one entry of the core for the Nest layer (src/): the public API (index.ts) plus the few
 * internals the module needs. Not a package export: users import `nestjs-work-queue/core`.
 */
export * from './index.js';
export { invalidOptions, redisError, stepOf } from './errors.js';
export { checkName, QUEUE_OPTION_KEYS, resolveQueueOptions } from './options.js';
export { bounded } from './redis/bounded.js';
export { endNow } from './redis/connection.js';
export { infos, summarize } from './redis/info.js';
export { prepareSchedule } from './schedules/spec.js';
export { sandboxOptionProblems } from './sandbox/options.js';
export { MAX_TIMER_MS, shown, timerProblem } from './util/checks.js';
export { redactUrl, shownMasked } from './util/secrets.js';
export { within } from './util/timeout.js';
export { heartbeatIntervalProblem } from './worker/options.js';
export type { WorkerLiveness } from './worker/liveness.js';
export type { WorkerStartWait } from './worker/start-waits.js';
