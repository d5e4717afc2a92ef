/**
 * Job data written to Redis by hand, in shapes the queue does not expect, with a Worker running
 * over it: garbage payloads, garbage or ill-typed metadata, ids with no data, lease entries with
 * garbage tokens, keys of the wrong TYPE. The worker never crashes or stalls: good jobs complete,
 * bad ones are dead-lettered with a reason (or repaired), and a key of the wrong type is a clear
 * error (`SCRIPT_ERROR`, WRONGTYPE) reported through the worker's 'error' event until it is fixed.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Worker, WorkQueueError, type WorkQueue } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { putPayload } from '../../support/payloads.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

interface Run {
  worker: Worker<unknown, unknown>;
  done: string[];
  errors: string[];
  warnings: string[];
}

function startWorker(q: WorkQueue<unknown>, warnings: string[]): Run {
  const done: string[] = [];
  const errors: string[] = [];
  const worker = new Worker(
    q,
    (job) => {
      done.push(`${job.id}:${JSON.stringify(job.data)}:p${job.priority}:a${job.attempt}`);
      return null;
    },
    { concurrency: 4, idleTimeoutMs: 100, leaseMs: 5_000 },
  );
  worker.on('error', (e) =>
    errors.push(e instanceof WorkQueueError ? `${e.code}: ${e.message}` : String(e)),
  );
  return { worker, done, errors, warnings };
}

function queueWithLog(): { q: WorkQueue<unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const q = fx.queue<unknown>({
    logger: { warn: (m) => void warnings.push(m), error: (m) => void warnings.push(m) },
  });
  return { q, warnings };
}

describe('hand-written job data in unexpected shapes', () => {
  it('a Worker runs the good jobs and dead-letters the bad ones with a reason; nothing crashes', async () => {
    const { q, warnings } = queueWithLog();
    const c: Redis = fx.client();
    const k = q.keys;
    // Good jobs 1..3 and victims 4..9, all pending at priority 5.
    await q.addBulk([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => ({ data: { n } })));
    await putPayload(c, k, '4', '{not json'); // garbage payload
    await c.hset(k.key('meta'), '5', '{garbage'); // garbage metadata
    await c.hset(k.key('meta'), '6', '[1,2,3]'); // metadata, not an object
    await c.hset(k.key('meta'), '7', '"text"'); // metadata, not an object
    // Metadata with fields of the wrong type / range: ignored, defaults apply.
    await c.hset(k.key('meta'), '8', JSON.stringify({ p: 42, a: 'many', m: -1, n: 7, x: 'x' }));
    await c.hset(k.key('meta'), '9', JSON.stringify({ p: 'x', b: 'fast', i: 12 }));
    // An id in a pending list with no data (a tombstone), and one with a non-numeric id.
    await c.rpush(k.pending(5), '777');
    await putPayload(c, k, 'abc', JSON.stringify({ n: 'abc' }));
    await c.rpush(k.pending(2), 'abc');
    // A leased job whose token is garbage and whose lease has expired.
    await putPayload(c, k, '900', JSON.stringify({ n: 900 }));
    await c.zadd(k.leased, (await redisNow(c)) - 1_000, '900');
    await c.hset(k.leaseHolders, '900', 'zzz');
    // A payload in no list at all (repair requeues it), a progress value that is not JSON.
    await putPayload(c, k, '901', JSON.stringify({ n: 901 }));
    await c.hset(k.key('progress'), '3', 'half done');
    expect((await q.getJob('3'))!.progress).toBe('half done');

    const run = startWorker(q, warnings);
    await q.clean(); // reclaims the expired garbage-token lease of 900
    await waitFor(async () => (await q.counts()).pending === 0 && (await q.counts()).leased === 0, {
      what: 'the worker to drain the queue',
    });
    const report = await q.repair();
    expect(report.fixes).toEqual([expect.stringMatching(/^901: payload in no queue: requeued/)]);
    await waitFor(() => run.done.some((d) => d.startsWith('901:')), { what: 'job 901 to run' });
    await run.worker.close({ timeoutMs: 1_000 });

    expect(run.done.sort()).toEqual(
      [
        '1:{"n":1}:p5:a1',
        '2:{"n":2}:p5:a1',
        '3:{"n":3}:p5:a1',
        '8:{"n":8}:p5:a1',
        '901:{"n":901}:p5:a1',
        '900:{"n":900}:p5:a1',
        'abc:{"n":"abc"}:p5:a1',
        // 9's metadata has a caller id of the wrong type: its public id is its number.
        '9:{"n":9}:p5:a1',
      ].sort(),
    );
    const dead = Object.fromEntries((await q.listDead()).map((d) => [d.id, d.reason]));
    expect(dead).toEqual({
      '4': 'undecodable: payload is not valid JSON (9 bytes)',
      '5': 'undecodable metadata: not valid JSON (8 bytes)',
      '6': 'undecodable metadata: not a JSON object',
      '7': 'undecodable metadata: not a JSON object',
    });
    // Reasons are logged without any of the payload.
    expect(warnings.join('\n')).not.toContain('not json');
    expect(warnings).toHaveLength(4);
    expect(run.errors).toEqual([]);
    // The dead ones can be retried or purged like any other dead job.
    expect(await q.purgeDead()).toBe(4);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it("metadata with a lone surrogate's JSON escape keeps its other fields through a retry", async () => {
    const q = fx.queue<string>();
    const { id } = await q.add('x', { id: 'cid-1', priority: 1, maxAttempts: 5 });
    const meta = q.keys.key('meta');
    const [seq] = await fx.client().hkeys(meta);
    // As JSON.stringify writes a name with a lone surrogate (the add refuses one now).
    const raw = JSON.stringify({ i: 'cid-1', n: 'send\uD800', p: 1, m: 5 });
    expect(raw).toContain('\\ud800');
    await fx.client().hset(meta, seq!, raw);
    const [lease] = await q.lease();
    expect(await q.fail(lease!, new Error('boom'))).toBe('retried');
    expect(await q.getJob(id)).toMatchObject({
      id: 'cid-1',
      name: 'send\uFFFD',
      priority: 1,
      attemptsMade: 1,
      lastError: 'boom',
    });
    expect(await q.promote(id)).toBe(true); // (its retry waits out the default backoff)
    const [again] = await q.lease();
    expect(again).toMatchObject({ id: 'cid-1', attempt: 2, maxAttempts: 5, priority: 1 });
    // A maxAttempts past what the API takes, written by hand, stays that large through a retry.
    const big = await q.add('y', { id: 'cid-2' });
    const [seq2] = (await fx.client().hkeys(meta)).filter((s) => s !== seq);
    await fx.client().hset(meta, seq2!, '{"i":"cid-2","m":1e19}');
    const [third] = await q.lease();
    expect(await q.fail(third!, new Error('boom'))).toBe('retried');
    expect(await q.promote(big.id)).toBe(true);
    const [fourth] = await q.lease();
    expect(fourth).toMatchObject({ id: 'cid-2', attempt: 2, maxAttempts: 1e19 });
  });

  it('a key of the wrong TYPE is a clear SCRIPT_ERROR; the worker reports it, keeps running, and recovers', async () => {
    const { q, warnings } = queueWithLog();
    const c = fx.client();
    await q.add({ n: 1 });
    const run = startWorker(q, warnings);
    await waitFor(() => run.done.length === 1, { what: 'job 1 to run' });
    // The payload bucket of the next job replaced by a string.
    await c.del(q.keys.dataBucket('2'));
    await c.set(q.keys.dataBucket('2'), 'oops');
    const e = (await q.add({ n: 2 }).catch((x: unknown) => x)) as WorkQueueError;
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.code).toBe('SCRIPT_ERROR');
    expect(e.message).toMatch(/^queue .*: add: WRONGTYPE/);
    expect(((await q.getJob('1').catch((x: unknown) => x)) as WorkQueueError).code).toBe(
      'SCRIPT_ERROR',
    );
    // A pending list replaced by a string: the worker's lease fails, reported as 'error'.
    await c.del(q.keys.dataBucket('2'));
    await c.set(q.keys.pending(5), 'oops');
    await c.rpush(q.keys.wake, '1');
    await waitFor(() => run.errors.some((m) => /WRONGTYPE/.test(m)), {
      what: 'the worker to report WRONGTYPE',
    });
    expect(run.errors.every((m) => m.startsWith('SCRIPT_ERROR: queue '))).toBe(true);
    // Fixed by hand: the same worker processes new jobs again.
    await c.del(q.keys.pending(5));
    await q.add({ n: 3 });
    await waitFor(() => run.done.length === 2, { what: 'job 3 to run', timeoutMs: 10_000 });
    expect(run.done[1]).toMatch(/^\d+:\{"n":3\}/);
    await run.worker.close({ timeoutMs: 1_000 });
  });
});
