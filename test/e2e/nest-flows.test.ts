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
const strings: unknown[] = [];

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

@Processor('nf-strings')
class StringProcessor {
  @Process()
  take(job: Job<string>): void {
    strings.push(job.data);
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

  it("encodes a node's payload as its queue's add does; refuses a queue on another connection or prefix", async () => {
    const own = uniqueName('nf-own');
    const app = await start({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: testRedisUrl() },
          connections: { other: { url: testRedisUrl() } },
          prefix,
          logger: false,
        }),
        WorkQueueModule.registerQueue(
          { name: 'nf-parents' },
          { name: 'nf-strings', codec: 'string' },
          { name: 'nf-small', maxPayloadBytes: 50 },
          { name: 'nf-elsewhere', configKey: 'other' },
          { name: 'nf-prefixed', prefix: own },
        ),
        WorkQueueModule.registerFlowProducer({}, { name: 'strict', queues: ['nf-parents'] }),
      ],
      providers: [StringProcessor, Orders],
    });
    const { flows } = app.get(Orders);
    // The queue's own codec: its processor gets the string as added, not its JSON.
    await flows.add({ queue: 'nf-strings', data: 'hello' });
    await waitFor(() => strings.length === 1, { what: 'the string processor' });
    expect(strings).toEqual(['hello']);
    // Its size limit, and another connection or prefix: refused, every node named, nothing written.
    const refused = flows.add({
      queue: 'nf-parents',
      id: 'p-refused',
      data: null,
      children: [
        { queue: 'nf-small', data: 'x'.repeat(200) },
        { queue: 'nf-elsewhere', data: 1 },
        { queue: 'nf-prefixed', data: 2 },
      ],
    });
    await expect(refused).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const problems = ((await refused.catch((e: unknown) => e)) as { problems: string[] }).problems;
    expect(problems).toEqual([
      expect.stringMatching(/^children\[0\]\.data: .*over maxPayloadBytes 50/),
      expect.stringMatching(
        /^children\[1\]\.queue: queue "nf-elsewhere" is registered on its own connection or prefix/,
      ),
      expect.stringMatching(
        /^children\[2\]\.queue: queue "nf-prefixed" is registered on its own connection or prefix/,
      ),
    ]);
    expect(await flows.getBatch('nf-parents/p-refused')).toBeNull();
  });
});
