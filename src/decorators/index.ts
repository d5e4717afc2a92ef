// The decorators: @Processor(), @Process(), @InjectQueue().
export * from './inject-queue.decorator.js';
export * from './process.decorator.js';
export * from './processor.decorator.js';
