import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { Logger, ValidationPipe, type INestApplication, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

/** Create the sample app (not listening yet): validation, shutdown hooks. */
export async function createApp(
  redisUrl: string,
  prefix?: string,
  logger?: LogLevel[] | false,
): Promise<INestApplication> {
  const app = await NestFactory.create(AppModule.forRoot({ redisUrl, prefix }), {
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
  const app = await createApp(redisUrl);
  await app.listen(port);
  new Logger('Sample').log(
    `listening on http://localhost:${port} — try: curl -XPOST localhost:${port}/jobs -H 'content-type: application/json' -d '{"name":"welcome","data":{"to":"a@example.com"}}'`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
