/**
 * How much one script call may carry in strings — payloads, metas, results — counted in UTF-16
 * units of a string (bytes of a Buffer): ioredis writes a call's arguments as one string, whose
 * longest in V8 is ~512 Mi units; a call past it failed ("Invalid string length") and, from a
 * Worker, failed again on every retry. Under this bound one call also keeps Redis busy for at
 * most about a second (≤ 96 MiB of UTF-8).
 */
export const CALL_UNITS = 32 * 1024 * 1024;

/**
 * How many of `items`, from `from`, go in one call: at most `maxCount`, and no more than
 * CALL_UNITS of `units(item)` in all — but at least one (one item is bounded by its own limit,
 * `maxPayloadBytes`).
 */
export function callShare<X>(
  items: readonly X[],
  from: number,
  maxCount: number,
  units: (item: X) => number,
): number {
  const end = Math.min(items.length, from + maxCount);
  let sum = 0;
  for (let i = from; i < end; i++) {
    sum += units(items[i]!);
    if (sum > CALL_UNITS && i > from) return i - from;
  }
  return end - from;
}

/** What a log line costs a call, in UTF-16 units (it goes as '<seq>:<bytes>:<line>'). */
export const lineUnits = (line: string): number => line.length + 24;

/** What a complete carries of its job: its result, when it is sent, and its log lines. */
export function resultUnits(item: {
  encoded?: string;
  logs?: { lines: readonly string[] } | undefined;
}): number {
  let n = item.encoded?.length ?? 0;
  const lines = item.logs?.lines;
  if (lines) for (const line of lines) n += lineUnits(line);
  return n;
}

/** `items` split in the share of one call (callShare from 0, any number) and the rest. */
export function firstShare<X>(items: X[], units: (item: X) => number): [X[], X[]] {
  const n = callShare(items, 0, items.length, units);
  return n === items.length ? [items, []] : [items.slice(0, n), items.slice(n)];
}
