// The sample app's jobs over HTTP: adding (ids dedupe), results, dead letters and their retry,
// cancelling, promoting; and its events listener, which hears the outcomes of all of these.
import { describe, expect, it } from '@jest/globals';
import { EmailEventsListener } from '../../sample/email-events.listener.js';
import { EMAILS } from '../../sample/emails.js';
import { getQueueToken, type WorkQueue } from '../../src/index.js';
import { waitFor } from '../support/wait.js';
import { app, bootSampleApp, getJob, http } from './sample-app.js';

bootSampleApp();

describe('sample app', () => {
  it('enqueues, processes, and shows the result; a caller id dedupes', async () => {
    const created = await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'a@example.com' }, id: 'welcome-a' })
      .expect(201);
    expect(created.body).toEqual({ id: 'welcome-a', added: true });
    const done = await waitFor(async () => {
      const job = await getJob('welcome-a');
      return job.state === 'completed' ? job : undefined;
    });
    expect(done).toMatchObject({ result: { messageId: expect.stringMatching(/^welcome-/) } });
    // Its kept copy purged, its stored result still answers: no logs, not a 500 (getJobLogs
    // is NOT_FOUND for it).
    const emails = app.get<WorkQueue>(getQueueToken(EMAILS));
    expect(await emails.purgeCompleted('welcome-a')).toBe(1);
    expect(await getJob('welcome-a')).toMatchObject({ state: 'completed', logs: [] });
    // Completed: the id is free again (dedupe holds while the job exists).
    const unnamed = await http()
      .post('/jobs')
      .send({ data: { to: 'b@example.com' } })
      .expect(201);
    expect(unnamed.body).toMatchObject({ added: true, id: expect.stringMatching(/^\d+$/) });
  });

  it('dedupes a caller id while the job exists', async () => {
    const body = { name: 'welcome', data: { to: 'c@example.com' }, id: 'later-c', delayMs: 60_000 };
    expect((await http().post('/jobs').send(body).expect(201)).body).toEqual({
      id: 'later-c',
      added: true,
    });
    expect((await http().post('/jobs').send(body).expect(201)).body).toEqual({
      id: 'later-c',
      added: false,
    });
    expect(await getJob('later-c')).toMatchObject({ state: 'delayed', name: 'welcome' });
  });

  it('an email without an address is dead-lettered at once, with the reason', async () => {
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { name: 'no address' }, id: 'no-to' })
      .expect(201);
    const dead = await waitFor(async () => {
      const job = await getJob('no-to');
      return job.state === 'dead' && job;
    });
    expect(dead).toMatchObject({
      attemptsMade: 1,
      deadReason: 'data.to must be an email address',
    });
  });

  it('refuses a bad body with every reason', async () => {
    const res = await http()
      .post('/jobs')
      .send({ priority: 12, delayMs: -1, id: '42', name: 7 })
      .expect(400);
    const reasons = (res.body as { message: string[] }).message;
    expect(reasons).toEqual(
      expect.arrayContaining([
        expect.stringContaining('data'),
        expect.stringContaining('priority'),
        expect.stringContaining('delayMs'),
        expect.stringContaining('id'),
        expect.stringContaining('name'),
      ]),
    );
  });

  it('retries a failing digest until it succeeds, with progress', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ name: 'digest', data: { to: 'd@example.com', failTimes: 1 } })
      .expect(201);
    const id = (body as { id: string }).id;
    const done = await waitFor(async () => {
      const job = await getJob(id);
      return job.state === 'completed' ? job : undefined;
    });
    expect(done).toMatchObject({ result: { messageId: `digest-${id}` } });
  });

  it('dead-letters a job that always fails, lists it, and retries it', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ name: 'digest', data: { to: 'e@example.com', alwaysFail: true } })
      .expect(201);
    const id = (body as { id: string }).id;
    const dead = await waitFor(
      async () => {
        const list = (await http().get('/dead').expect(200)).body as Array<Record<string, unknown>>;
        return list.find((j) => j.id === id);
      },
      { timeoutMs: 10_000, what: 'the job in /dead' },
    );
    expect(dead).toMatchObject({ attemptsMade: 3, reason: expect.stringContaining('refused') });
    await http().post(`/dead/${id}/retry`).expect(200, { id, retried: true });
    // Right after the retry it is back in line, not dead: waiting, running, or (its attempt
    // failed again already: 100 ms) waiting for its backoff of 200 ms, then 400 ms.
    expect(['pending', 'leased', 'delayed']).toContain((await getJob(id)).state);
    await http().post(`/dead/${id}/retry`).expect(404);
    await http().post('/dead/nope/retry').expect(404);
  });

  it('cancels a job', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ data: { to: 'f@example.com' }, delayMs: 60_000 })
      .expect(201);
    const id = (body as { id: string }).id;
    await http().delete(`/jobs/${id}`).expect(200, { id, cancelled: true });
    expect(await getJob(id)).toEqual({ id, state: 'unknown', logs: [] });
    await http().delete(`/jobs/${id}`).expect(404);
  });

  it('promotes a delayed job, which then runs', async () => {
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'h@example.com' }, id: 'promote-me', delayMs: 60_000 })
      .expect(201);
    expect((await getJob('promote-me')).state).toBe('delayed');
    await http()
      .post('/jobs/promote-me/promote')
      .expect(200, { id: 'promote-me', queue: 'emails', promoted: true });
    const res = await http().get('/jobs/promote-me/result').expect(200);
    expect(res.body).toMatchObject({ result: { messageId: 'welcome-promote-me' } });
    await http().post('/jobs/promote-me/promote').expect(404);
  });

  it('answers GET /jobs/:id/result with 404 for an unknown job and 400 for a bad timeout', async () => {
    await http().get('/jobs/never-added/result?timeoutMs=1000').expect(404);
    const bad = await http().get('/jobs/never-added/result?timeoutMs=soon').expect(400);
    expect((bad.body as { message: string[] }).message).toEqual([
      expect.stringContaining('timeoutMs must be a positive integer'),
    ]);
  });

  it('hears outcomes of every instance in its events listener', async () => {
    const listener = app.get(EmailEventsListener);
    // The jobs of the tests above: completed ones, and the dead-lettered digest.
    await waitFor(() => listener.heard.completed > 0 && listener.heard.dead > 0, {
      what: 'completed and dead events heard',
    });
    expect(listener.heard.failed).toBeGreaterThanOrEqual(3);
  });
});
