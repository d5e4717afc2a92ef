/**
 * bull-board over HTTP for adapter tests: an express app serving the board for some queues at
 * /board (@bull-board/express, responses validated against the board's schemas), and the view of
 * one queue as the board's API returns it.
 */
import { createBullBoard } from '@bull-board/api';
import type { IServerAdapter } from '@bull-board/api/dist/types.js';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import request from 'supertest';
import type { WorkQueue } from '../../lib/index.js';
import { WorkQueueAdapter } from '../../src/bull-board/index.js';

/** An express app serving the board for `queues` at /board (responses checked against schemas). */
export function board(...queues: WorkQueue[]) {
  const server = new ExpressAdapter();
  server.setBasePath('/board');
  createBullBoard({
    queues: queues.map((q) => new WorkQueueAdapter(q)),
    // @bull-board/express pins its own @bull-board/api copy: same shapes, distinct private fields.
    serverAdapter: server as unknown as IServerAdapter,
    options: { validateResponses: true },
  });
  const app = express();
  app.use('/board', server.getRouter());
  return request(app);
}

export type AppQueue = {
  name: string;
  counts: Record<string, number>;
  statuses: string[];
  jobs: Array<{ id: string; name: string; data: unknown; attempts: number; failedReason?: string }>;
  pagination: { pageCount: number };
  isPaused: boolean;
};

export async function listed(
  http: ReturnType<typeof board>,
  q: WorkQueue,
  status = 'latest',
  page = 1,
  jobsPerPage = 10,
): Promise<AppQueue> {
  const res = await http
    .get('/board/api/queues')
    .query({ activeQueue: q.name, status, page, jobsPerPage })
    .expect(200);
  return (res.body as { queues: AppQueue[] }).queues.find((x) => x.name === q.name)!;
}
