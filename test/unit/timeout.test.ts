// within(): races of one length share one timer (lib/util/timeout.ts). Each race still gets its
// own outcome, a late one fires, a settled one never does, and no timer holds the process open.
import { execFileSync } from 'node:child_process';
import { describe, expect, it, jest } from '@jest/globals';
import { within } from '../../lib/util/timeout.js';

const never = new Promise<never>(() => undefined);

describe('within', () => {
  it('answers each race of one length with its own outcome, settled or late, in any order', async () => {
    const settles: Array<(v: number) => void> = [];
    const races = Array.from({ length: 6 }, (_, i) =>
      within(
        i % 2 === 0 ? new Promise<number>((r) => settles.push(r)) : never,
        20,
        () => `late ${i}`,
      ),
    );
    // Settled out of order: the head last.
    settles[2]!(2);
    settles[1]!(1);
    settles[0]!(0);
    expect(await Promise.all(races)).toEqual([0, 'late 1', 1, 'late 3', 2, 'late 5']);
  });

  it('rejects with what late() throws, with the promise’s own error, undefined without late()', async () => {
    await expect(
      within(never, 5, () => {
        throw new Error('no reply');
      }),
    ).rejects.toThrow('no reply');
    await expect(within(Promise.reject(new Error('own')), 5, () => 1)).rejects.toThrow('own');
    await expect(within(never, 0)).resolves.toBeUndefined();
    // Another race of the same length after the lane's timer went.
    await expect(within(Promise.resolve('v'), 5)).resolves.toBe('v');
  });

  it('a race started by a late() of its lane does not delay the races queued behind the one that fired', () => {
    jest.useFakeTimers();
    try {
      const fired: string[] = [];
      const ms = 1_234; // a length no other test here uses (this lane keeps a fake timer)
      void within(never, ms, () => {
        fired.push('a');
        void within(never, ms, () => fired.push('c'));
      });
      jest.advanceTimersByTime(10);
      void within(never, ms, () => fired.push('b'));
      jest.advanceTimersByTime(ms - 10);
      expect(fired).toEqual(['a']);
      jest.advanceTimersByTime(10); // b's deadline, long before c's
      expect(fired).toEqual(['a', 'b']);
      jest.advanceTimersByTime(ms);
      expect(fired).toEqual(['a', 'b', 'c']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('a race longer than the longest timer waits that long (~24.8 days), not none', () => {
    jest.useFakeTimers();
    try {
      const fired: string[] = [];
      void within(never, 2 ** 31 + 3_000, () => fired.push('long'));
      void within(never, Number.NaN, () => fired.push('NaN')); // as setTimeout: at once
      jest.advanceTimersByTime(1_000);
      expect(fired).toEqual(['NaN']);
      jest.advanceTimersByTime(2 ** 31 - 1 - 1_000);
      expect(fired).toEqual(['NaN', 'long']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('holds the process open only while a race waits', () => {
    // A child that settles a race of 10 minutes, then has nothing to do: it exits (execFileSync
    // would throw on its 60 s timeout); one whose race never settles waits for it.
    const src = (settled: boolean) =>
      `import('${process.cwd()}/lib/util/timeout.ts').then(async ({ within }) => {` +
      `  const r = await within(${settled ? 'Promise.resolve(7)' : 'new Promise(() => {})'}, ${settled ? 600_000 : 50}, () => 'late');` +
      `  console.log(r);` +
      `})`;
    const run = (settled: boolean) =>
      execFileSync(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', '-e', src(settled)],
        {
          timeout: 60_000,
          encoding: 'utf8',
        },
      ).trim();
    expect(run(true)).toBe('7');
    expect(run(false)).toBe('late');
  });
});
