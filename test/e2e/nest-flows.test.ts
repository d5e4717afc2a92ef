import { afterAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import {
  FlowProducer,
  getFlowProducerToken,
  InjectFlowProducer,
  Process,
  Processor,
  WorkQueueModule,
  type Job,
} from '../../src/index.js';
import { nestAppsClosedAfterEach } from '../support/nest-app.js';
import { deleteKeys, testRedisUrl, uniqueName } from '../support/keys.js';
import { Redis } from 'ioredis';
import { waitFor } from '../support/wait.js';

const prefix = uniqueName('nf');
const start = nestAppsClosedAfterEach();
afterAll(async () => {
  const c = new Redis(testRedisUrl());
  await deleteKeys(c, `${prefix}:*`);
  c.disconnect();
});

const seen: unknown[] = [];

@Processor('nf-kids')
class KidProcessor {
  @Process()
  double(job: Job<number>): number {
    return job.data * 2;
  }
}

@Processor('nf-parents')
class ParentProcessor {
  @Process()
  async sum(job: Job<string>): Promise<void> {
    seen.push({ data: job.data, results: await job.getChildrenResults<number>() });
  }
}

@Injectable()
class Orders {
  constructor(
    @InjectFlowProducer() readonly flows: FlowProducer,
    @InjectFlowProducer('strict') readonly strict: FlowProducer,
  ) {}
}

describe('WorkQueueModule.registerFlowProducer + @InjectFlowProducer', () => {
  it('injects producers on the module connection and prefix; processors read children results', async () => {
    const app = await start({
      imports: [
        WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
        WorkQueueModule.registerQueue({ name: 'nf-kids' }, { name: 'nf-parents' }),
        WorkQueueModule.registerFlowProducer({}, { name: 'strict', queues: ['nf-parents'] }),
      ],
      providers: [KidProcessor, ParentProcessor, Orders],
    });
    const orders = app.get(Orders);
    expect(app.get(getFlowProducerToken())).toBe(orders.flows);
    expect(orders.flows.options.prefix).toBe(prefix);
    const added = await orders.flows.add({
      queue: 'nf-parents',
      data: 'sum',
      children: [1, 2, 3].map((n) => ({ queue: 'nf-kids', data: n })),
    });
    await waitFor(() => seen.length === 1, { what: 'the parent processor' });
    const ids = added.children!.map((c) => `nf-kids:${c.job.id}`);
    expect(seen[0]).toEqual({ data: 'sum', results: { [ids[0]!]: 2, [ids[1]!]: 4, [ids[2]!]: 6 } });
    await expect(
      orders.strict.add({
        queue: 'nf-parents',
        data: 1,
        children: [{ queue: 'nf-kids', data: 1 }],
      }),
    ).rejects.toMatchObject({ problems: ['children[0].queue: unknown queue "nf-kids"'] });
  });
});
