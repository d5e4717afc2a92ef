/**
 * A Worker's lease renewal carries its running jobs' log lines, at most CALL_UNITS of them in
 * one call (lib/util/call-share.ts): lines logged past that go with the next renewal or the
 * outcome, in order. (Without the bound one renewal carried them all: past V8's longest string,
 * ~512 Mi units, every renewal failed, the leases lapsed and the jobs ran again.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { loadedScript } from '../../../lib/scripts/define.js';
import { CALL_UNITS } from '../../../lib/util/call-share.js';
import { uniqueName, testRedisUrl } from '../../support/keys.js';
import { waitFor } from '../../support/wait.js';
import { deferred } from '../../support/worker.js';

const client = new Redis(testRedisUrl());
afterAll(() => client.quit());

/** The size (UTF-16 units of its arguments) of every extend_leases call `c` sends. */
function renewalSizes(c: Redis): number[] {
  const sha = loadedScript('extend_leases').sha;
  const text = loadedScript('extend_leases').lua;
  const sizes: number[] = [];
  const original = c.sendCommand.bind(c);
  c.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    const first = String(command.args[0]);
    if (command.name.startsWith('eval') && (first === sha || first === text)) {
      let n = 0;
      for (const a of command.args.slice(1)) n += String(a).length;
      sizes.push(n);
    }
    return (original as (...a: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return sizes;
}

describe('log lines in renewals', () => {
  it('a renewal carries at most CALL_UNITS of lines; the rest follow, every line kept in order', async () => {
    const LINES = 12_000;
    const line = (job: number, i: number) =>
      `${job}:${String(i).padStart(6, '0')}:${'x'.repeat(1990)}`;
    const q = new WorkQueue<number>(client, uniqueName(), { logger: false, maxLogLines: LINES });
    for (const j of [1, 2]) await q.add(j, { id: `j${j}` });
    const sizes = renewalSizes(client);
    const logged = deferred<void>();
    const go = deferred<void>();
    let started = 0;
    // Two jobs' lines, ~48 Mi units in all: more than one renewal may carry.
    const w = new Worker<number>(
      q,
      async (job) => {
        for (let i = 0; i < LINES; i++) job.log(line(job.data, i));
        if (++started === 2) logged.resolve();
        await go.promise;
      },
      { concurrency: 2, leaseMs: 900 },
    );
    try {
      await logged.promise;
      const before = sizes.length;
      // Two renewals past the one that may have been out already: the lines went in both.
      await waitFor(() => sizes.length >= before + 3, {
        what: 'three renewals',
        timeoutMs: 30_000,
      });
      go.resolve();
      await waitFor(async () => (await q.counts()).completed === 2, { what: 'both completed' });
      for (const s of sizes) expect(s).toBeLessThanOrEqual(CALL_UNITS + 1024);
      expect(Math.max(...sizes)).toBeGreaterThan(CALL_UNITS / 2); // (a renewal carried lines)
      for (const j of [1, 2]) {
        const first = await q.getJobLogs(`j${j}`, { offset: 0, limit: 1 });
        expect(first.count).toBe(LINES);
        expect(first.lines).toEqual([line(j, 0)]);
        const last = await q.getJobLogs(`j${j}`, { offset: LINES - 1, limit: 1 });
        expect(last.lines).toEqual([line(j, LINES - 1)]);
        const middle = await q.getJobLogs(`j${j}`, { offset: 7_000, limit: 2 });
        expect(middle.lines).toEqual([line(j, 7_000), line(j, 7_001)]);
      }
    } finally {
      go.resolve();
      await w.close();
    }
  });
});
