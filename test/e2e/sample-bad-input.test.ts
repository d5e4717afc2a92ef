// The sample app answers bad input with a 400 on every route, never a 500: what the core refuses
// (INVALID_ARGUMENT: an id over 256 characters, a delay out of range) and a body nested too deep
// for validation to walk (sample/http-errors.ts).
import { describe, expect, it } from '@jest/globals';
import { bootSampleApp, http } from './sample-app.js';

bootSampleApp();

const LONG = 'x'.repeat(257);
const messages = (body: unknown) => (body as { message: string[] }).message.join(' | ');

describe('sample app: bad input', () => {
  it('an id the core refuses is a 400 on every route that takes one', async () => {
    const routes = [
      http().get(`/jobs/${LONG}`),
      http().delete(`/jobs/${LONG}`),
      http().post(`/dead/${LONG}/retry`),
      http().post(`/jobs/${LONG}/promote`),
      http().get(`/orders/${LONG}`),
      http().get(`/reports/${LONG}`),
    ];
    for (const route of routes) {
      const res = await route.expect(400);
      expect(messages(res.body)).toContain('id must be a string of 1-256 characters');
    }
  });

  it('a job the form lets through but the core refuses is a 400 with its reason', async () => {
    const far = await http()
      .post('/jobs')
      .send({ data: { to: 'a@example.com' }, delayMs: 1e20 })
      .expect(400);
    expect(messages(far.body)).toContain('delayMs');
    // 200 characters, 400 UTF-16 units: within the form's length, over the core's.
    const wide = await http()
      .post('/jobs')
      .send({ data: { to: 'a@example.com' }, id: '😀'.repeat(200) })
      .expect(400);
    expect(messages(wide.body)).toContain('id must be a string of 1-256 characters');
  });

  it('a body nested too deep is a 400 on every route with a body; 64 levels are fine', async () => {
    const nest = (n: number): unknown => {
      let v: unknown = [];
      for (let i = 1; i < n; i++) v = [v];
      return v;
    };
    for (const [path, body] of [
      ['/jobs', { data: { to: 'a@example.com', x: nest(1500) } }],
      ['/orders', { customer: 'c', amountCents: 1, items: nest(1500) }],
      ['/tenants/t/jobs', { data: nest(1500) }],
    ] as const) {
      const res = await http().post(path).send(body).expect(400);
      expect(messages(res.body)).toContain('nested deeper than 64 levels');
    }
    // The body, `data`, then `x` and the 61 arrays inside it: 64 levels in all; one more is refused.
    await http()
      .post('/jobs')
      .send({ data: { to: 'a@example.com', x: nest(62) } })
      .expect(201);
    await http()
      .post('/jobs')
      .send({ data: { to: 'a@example.com', x: nest(63) } })
      .expect(400);
  });
});
