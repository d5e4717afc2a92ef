// The sample's dashboard: bull-board at /admin/queues (express), showing our queues through
// `WorkQueueAdapter`, behind basic auth (BOARD_CREDENTIALS) or a middleware of your own.
import { Inject, Injectable, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { BullBoardModule, InjectBullBoard, type BullBoardServerAdapter } from '@bull-board/nestjs';
import { ExpressAdapter } from '@bull-board/express';
import type { RequestHandler } from 'express';
import { getQueueToken, type WorkQueue } from '../../src/index.js';
import { WorkQueueAdapter } from '../../src/bull-board/index.js';
import { basicAuth } from './basic-auth.js';

export interface BoardOptions {
  /** Queues (registered with WorkQueueModule.registerQueue) to show. */
  queues: string[];
  /** Where the board is served. Default `/admin/queues`. */
  route?: string;
  /** The guard in front of the board. Default: basic auth with BOARD_CREDENTIALS. */
  middleware?: RequestHandler;
}

const BOARD_QUEUES = Symbol('BOARD_QUEUES');

type Board = { addQueue(adapter: WorkQueueAdapter): void };

@Injectable()
class BoardQueues implements OnModuleInit {
  constructor(
    private readonly moduleRef: ModuleRef,
    @InjectBullBoard() private readonly board: Board,
    @Inject(BOARD_QUEUES) private readonly names: string[],
  ) {}

  onModuleInit(): void {
    for (const name of this.names) {
      const queue = this.moduleRef.get<WorkQueue>(getQueueToken(name), { strict: false });
      this.board.addQueue(new WorkQueueAdapter(queue));
    }
  }
}

@Module({})
export class BoardModule {
  static forRoot({ queues, route = '/admin/queues', middleware }: BoardOptions): DynamicModule {
    return {
      module: BoardModule,
      imports: [
        BullBoardModule.forRoot({
          route,
          // @bull-board/express 9.10.1 pins its own copy of @bull-board/api (same shapes, but a
          // private field makes TypeScript tell the two copies apart).
          adapter: ExpressAdapter as unknown as new () => BullBoardServerAdapter,
          middleware: middleware ?? basicAuth(process.env.BOARD_CREDENTIALS),
          boardOptions: { uiConfig: { boardTitle: 'nestjs-work-queue' } },
        }),
      ],
      providers: [{ provide: BOARD_QUEUES, useValue: queues }, BoardQueues],
    };
  }
}
