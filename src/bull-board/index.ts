// The 'nestjs-work-queue/bull-board' entry: our queues on bull-board (optional peer @bull-board/api).
export { WorkQueueAdapter, type WorkQueueAdapterOptions } from './work-queue.adapter.js';
export { BOARD_STATE, UnsupportedBoardActionError, WorkQueueBoardJob } from './work-queue.job.js';
