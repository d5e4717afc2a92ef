// The decorators: @Processor(), @Process(), @InjectQueue(), @InjectFlowProducer(),
// @OnWorkerEvent(), @QueueEventsListener(), @OnQueueEvent().
export * from './inject-flow-producer.decorator.js';
export * from './inject-queue.decorator.js';
export * from './on-queue-event.decorator.js';
export * from './on-worker-event.decorator.js';
export * from './process.decorator.js';
export * from './processor.decorator.js';
export * from './queue-events-listener.decorator.js';
