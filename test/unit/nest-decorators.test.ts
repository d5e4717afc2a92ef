import { describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { getQueueToken, InjectQueue, Process, Processor, type WorkQueue } from '../../src/index.js';
import { WorkQueueMetadataAccessor } from '../../src/work-queue-metadata.accessor.js';
import {
  WORK_QUEUE_PROCESS_METADATA,
  WORK_QUEUE_PROCESSOR_METADATA,
} from '../../src/work-queue.constants.js';

const accessor = new WorkQueueMetadataAccessor(new Reflector());

describe('decorators', () => {
  it('@Processor records the queue name and the worker options on the class', () => {
    const options = { concurrency: 3, leaseMs: 10_000 };
    @Processor('emails', options)
    class EmailProcessor {}
    options.concurrency = 99; // the decorator keeps its own copy

    expect(accessor.getProcessorMetadata(EmailProcessor)).toEqual({
      queueName: 'emails',
      options: { concurrency: 3, leaseMs: 10_000 },
    });
    expect(Reflect.getMetadata(WORK_QUEUE_PROCESSOR_METADATA, EmailProcessor)).toBeDefined();
    expect(accessor.getProcessorMetadata(class Plain {})).toBeUndefined();
    expect(accessor.getProcessorMetadata(undefined)).toBeUndefined();
  });

  it('@Processor without options records empty options', () => {
    @Processor('emails')
    class EmailProcessor {}
    expect(accessor.getProcessorMetadata(EmailProcessor)).toEqual({
      queueName: 'emails',
      options: {},
    });
  });

  it('@Process records the job name (or none) on the method', () => {
    class EmailProcessor {
      @Process('welcome')
      welcome() {}
      @Process()
      other() {}
      helper() {}
    }
    const proto = EmailProcessor.prototype;
    expect(accessor.getProcessMetadata(proto.welcome)).toEqual({ name: 'welcome' });
    expect(accessor.getProcessMetadata(proto.other)).toEqual({ name: undefined });
    expect(accessor.getProcessMetadata(proto.helper)).toBeUndefined();
    expect(Reflect.getMetadata(WORK_QUEUE_PROCESS_METADATA, proto.welcome)).toBeDefined();
  });

  it('getQueueToken is a readable string', () => {
    expect(getQueueToken('emails')).toBe('WorkQueue:emails');
  });

  it('@InjectQueue injects the provider of getQueueToken(name), as parameter or property', async () => {
    const stub = { name: 'emails' } as unknown as WorkQueue<{ to: string }>;
    @Injectable()
    class Sender {
      @InjectQueue('emails') readonly viaProperty!: WorkQueue<{ to: string }>;
      constructor(@InjectQueue('emails') readonly viaParameter: WorkQueue<{ to: string }>) {}
    }
    const ref = await Test.createTestingModule({
      providers: [Sender, { provide: getQueueToken('emails'), useValue: stub }],
    }).compile();
    const sender = ref.get(Sender);
    expect(sender.viaParameter).toBe(stub);
    expect(sender.viaProperty).toBe(stub);
    await ref.close();
  });
});
