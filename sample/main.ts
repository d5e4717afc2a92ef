import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { Logger, ValidationPipe, type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { AppModule, workersFromEnv } from './app.module.js';
import { EMAILS } from './emails.js';
import { BodyDepthPipe, WorkQueueErrorFilter } from './http-errors.js';

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
    new BodyDepthPipe(),
    new ValidationPipe({ transform: true, whitelist: true, forbidNonWhitelisted: true }),
  );
  app.useGlobalFilters(new WorkQueueErrorFilter(app.getHttpAdapter()));
  app.enableShutdownHooks();
  return app;
}

/** PORT (unset or empty: 3000; 0: any free port), or a problem. */
function portFromEnv(value = ''): number | string {
  if (value === '') return 3000;
  const port = Number(value);
  return /^\d+$/.test(value) && port <= 65535
    ? port
    : `PORT must be a port number 0-65535, got ${JSON.stringify(value)}`;
}

async function main(): Promise<void> {
  const log = new Logger('Sample');
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const port = portFromEnv(process.env.PORT);
  if (typeof port === 'string') {
    log.error(port);
    process.exit(1);
  }
  // The board is behind basic auth (BOARD_CREDENTIALS=user:password); refused when unset.
  // WORKERS=false: a web instance (adds jobs, processes none); default: it runs the workers too.
  const workers = workersFromEnv(process.env.WORKERS);
  const app = await createApp(redisUrl, undefined, undefined, { board: true, workers });
  // Started by npm start (sample/start.ts): gone with it, even when it was killed (SIGKILL).
  const launcher = Number(process.env.SAMPLE_LAUNCHER_PID);
  if (launcher > 0) {
    const watch = setInterval(() => {
      if (process.ppid === launcher) return;
      clearInterval(watch); // (once: a second SIGTERM would end the graceful shutdown)
      process.kill(process.pid, 'SIGTERM');
    }, 500);
    watch.unref();
  }
  // (Bootstrap, workers started, before the listen: a failure here is not the port's.)
  await app.init();
  try {
    await app.listen(port);
  } catch (e) {
    // (The workers started at bootstrap, before the listen: closed, their jobs handed back.)
    log.error(`cannot listen on port ${port}: ${(e as Error).message}`);
    await app.close();
    process.exit(1);
  }
  const at = (app.getHttpServer() as { address(): AddressInfo }).address().port;
  log.log(
    `listening on http://localhost:${at} — try: curl -XPOST localhost:${at}/jobs -H 'content-type: application/json' -d '{"name":"welcome","data":{"to":"a@example.com"}}'`,
  );
  log.log(`board: http://localhost:${at}/admin/queues (BOARD_CREDENTIALS)`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
