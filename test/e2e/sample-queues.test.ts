// The sample app's queues over HTTP: counts, its declared schedule, pausing and resuming, and
// jobs listed by state a page at a time.
import { describe, expect, it } from '@jest/globals';
import { waitFor } from '../support/wait.js';
import { bootSampleApp, getJob, http } from './sample-app.js';

bootSampleApp();

describe('sample app', () => {
  it('counts per queue', async () => {
    const res = await http().get('/queues').expect(200);
    expect(res.body).toMatchObject({
      emails: {
        pending: expect.any(Number),
        delayed: expect.any(Number),
        dead: expect.any(Number),
        workers: 1,
      },
    });
  });

  it('lists its declared schedule, whose next tick waits as a delayed job', async () => {
    const res = await http().get('/schedules').expect(200);
    const list = res.body as Array<{ id: string; nextFireAt: number; lastFireAt: number | null }>;
    expect(list).toEqual([
      expect.objectContaining({
        id: 'digest',
        spec: expect.objectContaining({ every: 60_000 }),
        template: expect.objectContaining({ name: 'digest', data: { to: 'team@example.com' } }),
        ticks: expect.any(Number),
        ended: false,
      }),
    ]);
    const { nextFireAt, lastFireAt } = list[0]!;
    // Upserted at bootstrap, a minute apart: the first tick is within the next minute.
    expect(nextFireAt).toBeGreaterThan(Date.now() - 1_000);
    expect(nextFireAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(lastFireAt === null || lastFireAt < nextFireAt).toBe(true);
    expect(await getJob(`digest:${nextFireAt}`)).toMatchObject({
      state: 'delayed',
      name: 'digest',
    });
  });

  it('pauses the queue (health up, saying paused; jobs wait) and resumes it', async () => {
    try {
      await http().post('/queues/emails/pause').expect(200, { queue: 'emails', paused: true });
      const health = await http().get('/health').expect(200);
      expect(health.body).toMatchObject({
        info: { queues: { status: 'up', queues: { emails: { paused: true } } } },
      });
      await http()
        .post('/jobs')
        .send({ name: 'welcome', data: { to: 'p@example.com' }, id: 'while-paused' })
        .expect(201);
      // Added after the pause: no worker may lease it.
      expect((await getJob('while-paused')).state).toBe('pending');
      const pending = await http().get('/queues/emails/jobs?state=pending').expect(200);
      expect((pending.body as Array<{ id: string }>).map((j) => j.id)).toContain('while-paused');
    } finally {
      await http().post('/queues/emails/resume').expect(200, { queue: 'emails', paused: false });
    }
    const res = await http().get('/jobs/while-paused/result?timeoutMs=5000').expect(200);
    expect(res.body).toEqual({
      id: 'while-paused',
      result: { messageId: 'welcome-while-paused', sentAt: expect.any(String) },
    });
    const health = await http().get('/health').expect(200);
    expect(health.body.info.queues.queues.emails.paused).toBe(false);
    await http().post('/queues/nope/pause').expect(404);
  });

  it('lists jobs by state a page at a time; bad input is 400 with every problem', async () => {
    for (const id of ['page-1', 'page-2', 'page-3']) {
      await http()
        .post('/jobs')
        .send({ data: { to: 'g@example.com' }, id, delayMs: 60_000 })
        .expect(201);
    }
    const delayed = async () => {
      const all = await http().get('/queues/emails/jobs?state=delayed&limit=1000').expect(200);
      expect((all.body as Array<{ state: string }>).every((j) => j.state === 'delayed')).toBe(true);
      return (all.body as Array<{ id: string }>).map((j) => j.id);
    };
    const ids = await delayed();
    expect(ids).toEqual(expect.arrayContaining(['page-1', 'page-2', 'page-3']));
    // The digest schedule's ticks come and go (a tick due moves on, the next one is made): a page
    // is compared with the listing only while that stayed the same around it.
    const paged = await waitFor(
      async () => {
        const before = await delayed();
        const page = await http()
          .get('/queues/emails/jobs?state=delayed&offset=1&limit=2')
          .expect(200);
        const after = await delayed();
        if (before.join() !== after.join()) return undefined;
        return { expected: before.slice(1, 3), got: page.body as Array<{ id: string }> };
      },
      { what: 'a page taken while the delayed jobs stayed the same' },
    );
    expect(paged.got.map((j) => j.id)).toEqual(paged.expected);

    const bad = await http()
      .get('/queues/emails/jobs?state=bogus&offset=-1&limit=5000')
      .expect(400);
    const problems = (bad.body as { message: string[] }).message;
    expect(problems).toEqual([
      expect.stringContaining(
        'state must be one of pending, delayed, leased, dead, waiting-children, completed, got "bogus"',
      ),
      expect.stringContaining('offset must be an integer >= 0, got -1'),
      expect.stringContaining('limit must be an integer 1..1000, got 5000'),
    ]);
    const words = await http().get('/queues/emails/jobs?offset=abc').expect(400);
    expect((words.body as { message: string[] }).message).toEqual([
      expect.stringContaining('state must be one of'),
      expect.stringContaining('offset must be an integer >= 0, got "abc"'),
    ]);
    await http().get('/queues/nope/jobs?state=pending').expect(404);
  });
});
