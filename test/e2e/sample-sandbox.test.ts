/**
 * The sample's sandboxed processor (sample/report.processor.ts): a report rendering that keeps
 * its thread busy for 2 s does not block the app — its HTTP endpoints answer all along (their
 * latencies are printed: not asserted, the machine is shared), and its result comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import type { ReportResult } from '../../sample/reports.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';

let redis: RedisHandle;
let app: INestApplication;
const http = () => request(app.getHttpServer());

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, uniqueName('sample'), false);
  await app.init();
}, 30_000);

afterAll(async () => {
  await app?.close();
  await redis?.dispose();
});

describe('the sample app with a report rendering in a thread sandbox', () => {
  it('answers HTTP requests while the rendering keeps its thread busy for 2 s', async () => {
    const { id } = (await http().post('/reports').send({ pages: 40, busyMs: 2_000 }).expect(201))
      .body as { id: string };
    // Requests one after another until the report is done: when each was answered, how long it took.
    const answers: Array<{ at: number; ms: number }> = [];
    let report: { state: string; result?: ReportResult } = { state: 'pending' };
    const deadline = Date.now() + 30_000;
    while (report.state !== 'completed' && Date.now() < deadline) {
      const t0 = performance.now();
      report = (await http().get(`/reports/${id}`).expect(200)).body as typeof report;
      answers.push({ at: Date.now(), ms: performance.now() - t0 });
    }
    expect(report.state).toBe('completed');
    const { startedAt, endedAt, pages } = report.result!;
    expect(pages).toBe(40);
    expect(endedAt - startedAt).toBeGreaterThanOrEqual(2_000);
    const during = answers.filter((a) => a.at > startedAt && a.at < endedAt).map((a) => a.ms);
    const sorted = [...during].sort((a, b) => a - b);
    console.log(
      `sample HTTP during the sandbox's ${endedAt - startedAt} ms busy loop: ${during.length} requests, ` +
        `median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms`,
    );
    // Answered during the loop. (This test runs in the app's process: had the loop blocked the
    // app's event loop, no answer could have come in before it ended.)
    expect(during.length).toBeGreaterThanOrEqual(3);
  }, 40_000);
});
