import { randomUUID } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { getQueueToken, WorkQueueModule, type WorkQueue } from 'nestjs-work-queue';
import { double, ownClient, workQueueOn } from './own-client';

describe("the app's own ioredis client", () => {
  const client = ownClient();
  afterAll(() => client.quit());

  it('runs jobs through the core API', async () => {
    expect(await double(client, `test-${randomUUID()}`, 21)).toBe(42);
  });

  it('is the connection of the Nest module, which leaves it open', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [workQueueOn(client), WorkQueueModule.registerQueue({ name: 'emails' })],
    }).compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    expect(app.get<WorkQueue>(getQueueToken('emails')).client).toBe(client);
    await app.close();
    expect(client.status).toBe('ready');
  });
});
