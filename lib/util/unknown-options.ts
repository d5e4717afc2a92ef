// Options given that are none of ours: each named, with ours for a BullMQ habit.

/** BullMQ's Queue and Worker options, and ours for them. */
export const BULLMQ_OPTION_HINTS: Readonly<Record<string, string>> = {
  connection:
    "a WorkQueue takes its ioredis client first: new WorkQueue(client, name); a Worker uses its queue's",
  defaultJobOptions: 'maxAttempts and backoff are queue options here, the rest per add',
  removeOnComplete: "BullMQ's removeOnComplete is keepCompleted here",
  removeOnFail: "BullMQ's removeOnFail is maxDead here",
  streams: "BullMQ's streams.events.maxLen is events: { maxLen } here",
  lockDuration: "BullMQ's lockDuration is leaseMs here",
  stalledInterval: 'leases that lapse are taken back by clean(), which every Worker runs',
  maxStalledCount: "BullMQ's maxStalledCount is maxLeaseExpiries here (a queue option)",
  limiter: 'a rate limit is the queue option limiter: { max, durationMs }',
  autorun: "BullMQ's autorun is autostart here",
  drainDelay: "BullMQ's drainDelay is idleTimeoutMs here",
  settings: "BullMQ's settings.backoffStrategy is backoffStrategy here",
  attempts: "BullMQ's attempts is the queue option maxAttempts here (or add's, per job)",
  delay: 'a delay is per add: add(data, { delayMs })',
  useWorkerThreads:
    "BullMQ's useWorkerThreads is the sandbox's mode: 'thread' (or 'process'): new Worker(queue, { file, mode })",
};

/** `o`'s keys that are not options (`known`), with a hint for BullMQ's. */
export function unknownOptionProblems(
  o: object,
  known: Readonly<Record<string, true>>,
  path = '',
): string[] {
  const problems: string[] = [];
  for (const k of Object.keys(o)) {
    if (known[k] || (o as Record<string, unknown>)[k] === undefined) continue;
    const hint = BULLMQ_OPTION_HINTS[k];
    problems.push(
      `${path}unknown option ${JSON.stringify(k)}${hint ? ` (${hint})` : ''}; known: ${Object.keys(known).join(', ')}`,
    );
  }
  return problems;
}

/** The keys of option object `o` (at `what`) that are not `known`, each a problem. */
export function nestedUnknown(
  what: string,
  o: object,
  known: readonly string[],
  problems: string[],
  hints: Readonly<Record<string, string>> = {},
): void {
  for (const k of Object.keys(o)) {
    if (known.includes(k) || (o as Record<string, unknown>)[k] === undefined) continue;
    const hint = hints[k] ? ` (${hints[k]})` : '';
    problems.push(
      `${what}: unknown option ${JSON.stringify(k)}${hint}; known: ${known.join(', ')}`,
    );
  }
}
