import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { Logger, ValidationPipe, type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule, workersFromEnv } from './app.module.js';
import { EMAILS } from './emails.js';

/**
 * Create the sample app (not listening yet): validation, shutdown hooks. `board`: mount
 * bull-board at /admin/queues (sample/admin/; @bull-board/nestjs is CommonJS requiring Nest's ES
 * modules, which plain Node loads but Jest on Node 20 cannot, so it is imported only when asked).
 */
export async function createApp(
  redisUrl: string,
  prefix?: string,
  logger?: LogLevel[] | false,
  { board = false, workers }: { board?: boolean; workers?: boolean | string[] } = {},
): Promise<INestApplication> {
  const root = AppModule.forRoot({ redisUrl, prefix, workers });
  if (board) {
    const { BoardModule } = await import('./admin/board.module.js');
    root.imports = [...(root.imports ?? []), BoardModule.forRoot({ queues: [EMAILS] })];
  }
  const app = await NestFactory.create(root, {
    logger:
      logger ??
      (process.env.LOG_LEVEL === 'debug'
        ? ['error', 'warn', 'log', 'debug']
        : ['error', 'warn', 'log']),
  });
  app.useGlobalPipes(
    new ValidationPipe({ transform: true, whitelist: true, forbidNonWhitelisted: true }),
  );
  app.enableShutdownHooks();
  return app;
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const port = Number(process.env.PORT ?? 3000);
  // The board is behind basic auth (BOARD_CREDENTIALS=user:password); refused when unset.
  // WORKERS=false: a web instance (adds jobs, processes none); default: it runs the workers too.
  const workers = workersFromEnv(process.env.WORKERS);
  const app = await createApp(redisUrl, undefined, undefined, { board: true, workers });
  await app.listen(port);
  new Logger('Sample').log(
    `listening on http://localhost:${port} — try: curl -XPOST localhost:${port}/jobs -H 'content-type: application/json' -d '{"name":"welcome","data":{"to":"a@example.com"}}'`,
  );
  new Logger('Sample').log(`board: http://localhost:${port}/admin/queues (BOARD_CREDENTIALS)`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
