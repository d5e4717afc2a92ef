/** Helpers of the history tests (test/integration/history/): Redis time, times in order. */
import { expect } from '@jest/globals';
import type { Redis } from 'ioredis';

/** Redis server time in ms. */
export async function redisNow(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Each time is a number within [from, to] and they do not go back (added ≤ started ≤ finished). */
export function inOrder(from: number, to: number, ...times: Array<number | undefined>): void {
  let last = from;
  times.forEach((t, i) => {
    expect({ i, t: typeof t }).toEqual({ i, t: 'number' });
    expect({ i, t, min: last, ok: t! >= last }).toEqual({ i, t, min: last, ok: true });
    last = t!;
  });
  expect({ last, to, ok: last <= to }).toEqual({ last, to, ok: true });
}
