// Cases of package.test.ts (run there, against its one packed project): the built code at work
// on Redis (the Lua scripts, sandboxes), and an app that loads both builds.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { deleteKeys, testRedisUrl, uniqueName } from '../support/keys.js';
import { link, node, project } from './packed-project.js';

/** Deletes the keys a case's script left under `prefix`. */
async function deleteKeysOf(prefix: string): Promise<void> {
  const redis = new Redis(testRedisUrl());
  try {
    await deleteKeys(redis, `${prefix}:*`);
  } finally {
    redis.disconnect();
  }
}

/** The built package runs: the core from CommonJS, sandboxed handlers, two copies at once. */
export function builtRuntime(): void {
  it('runs the Lua scripts from the CommonJS core with require(esm) off (no import.meta, no ESM)', async () => {
    const prefix = uniqueName('pkg');
    const out = node(
      [
        "const { Redis } = require('ioredis');",
        "const { WorkQueue } = require('nestjs-work-queue/core');",
        '(async () => {',
        `  const redis = new Redis(${JSON.stringify(testRedisUrl())});`,
        `  const q = new WorkQueue(redis, ${JSON.stringify(uniqueName('pkg-cjs'))}, { prefix: ${JSON.stringify(prefix)}, logger: false });`,
        '  try {',
        '    await q.add({ n: 1 });',
        '    const [job] = await q.lease({ count: 1 });',
        '    await q.complete(job);',
        '    const c = await q.counts();',
        '    console.log(job.data.n, c.pending);',
        '  } finally {',
        '    redis.disconnect();',
        '  }',
        '})().catch((e) => { console.error(e); process.exit(1); });',
      ].join('\n'),
      'commonjs',
      ['--no-experimental-require-module'],
    );
    expect(out.trim()).toBe('1 0');
    await deleteKeysOf(prefix);
  });

  it('runs sandboxed handlers from the built package, in a thread and a process, from ESM and from CommonJS', async () => {
    // An ESM handler module for the ESM build, a CommonJS one for the CommonJS build.
    writeFileSync(
      join(project, 'handler.mjs'),
      'export default async (job) => { await job.progress(1); return `${job.data.n * 2} ${typeof process.send}`; };\n',
    );
    writeFileSync(
      join(project, 'handler.cjs'),
      'module.exports = async (job) => `${job.data.n * 3} ${typeof process.send}`;\n',
    );
    const prefix = uniqueName('pkg');
    const script = (file: string) =>
      [
        "for (const mode of ['thread', 'process']) {",
        `  const q = new WorkQueue(redis, 'sandbox-' + mode, { prefix: ${JSON.stringify(prefix)}, logger: false });`,
        `  const w = new Worker(q, { file: ${JSON.stringify(join(project, file))}, mode });`,
        "  const done = new Promise((r) => w.on('completed', (_, res) => r(res)));",
        '  await q.add({ n: 7 });',
        "  out.push(mode + ': ' + (await done));",
        '  await w.close();',
        '}',
      ].join('\n');
    const esm = node(
      [
        "import { Redis } from 'ioredis';",
        "import { WorkQueue, Worker } from 'nestjs-work-queue/core';",
        `const redis = new Redis(${JSON.stringify(testRedisUrl())});`,
        'const out = [];',
        script('handler.mjs'),
        "console.log(out.join(', '));",
        'redis.disconnect();',
      ].join('\n'),
    );
    // In the thread, `process.send` is undefined; in the forked process it is the IPC channel's.
    expect(esm.trim()).toBe('thread: 14 undefined, process: 14 function');
    const cjs = node(
      [
        "const { Redis } = require('ioredis');",
        "const { WorkQueue, Worker } = require('nestjs-work-queue/core');",
        '(async () => {',
        `  const redis = new Redis(${JSON.stringify(testRedisUrl())});`,
        '  const out = [];',
        script('handler.cjs'),
        "  console.log(out.join(', '));",
        '  redis.disconnect();',
        '})().catch((e) => { console.error(e); process.exit(1); });',
      ].join('\n'),
      'commonjs',
    );
    expect(cjs.trim()).toBe('thread: 21 undefined, process: 21 function');
    await deleteKeysOf(prefix);
  });

  it('runs a sandboxed Nest processor from the built package (its module booted in each sandbox), in a thread and a process', () => {
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs'])
      if (!existsSync(join(project, 'node_modules', peer))) link(peer);
    // Decorators applied by hand: plain JavaScript, as a compiled app has them.
    writeFileSync(
      join(project, 'greet.processor.mjs'),
      [
        "import 'reflect-metadata';",
        "import { forwardRef, Injectable, Module } from '@nestjs/common';",
        "import { Process, Processor } from 'nestjs-work-queue';",
        'export class Greeter { greet(n) { return `hello ${n}`; } }',
        'Injectable()(Greeter);',
        'export class GreetProcessor {',
        '  constructor(greeter) { this.greeter = greeter; }',
        '  handle(job) { return `${this.greeter.greet(job.data.n)} ${typeof process.send}`; }',
        '}',
        "Reflect.defineMetadata('design:paramtypes', [Greeter], GreetProcessor);",
        "Process()(GreetProcessor.prototype, 'handle', Object.getOwnPropertyDescriptor(GreetProcessor.prototype, 'handle'));",
        "Processor('greet', { sandbox: { module: forwardRef(() => GreetModule), mode: process.env.MODE } })(GreetProcessor);",
        'export class GreetModule {}',
        'Module({ providers: [Greeter, GreetProcessor] })(GreetModule);',
      ].join('\n'),
    );
    const prefix = uniqueName('pkg');
    const app = [
      "import 'reflect-metadata';",
      "import { Module } from '@nestjs/common';",
      "import { NestFactory } from '@nestjs/core';",
      "import { Redis } from 'ioredis';",
      "import { WorkQueue, WorkQueueModule } from 'nestjs-work-queue';",
      "import { GreetModule } from './greet.processor.mjs';",
      `const url = ${JSON.stringify(testRedisUrl())};`,
      `const prefix = ${JSON.stringify(prefix)} + process.env.MODE;`,
      'class AppModule {}',
      "Module({ imports: [WorkQueueModule.forRoot({ connection: { url }, prefix, logger: false }), WorkQueueModule.registerQueue({ name: 'greet', storeResults: { ttlMs: 60000 } }), GreetModule] })(AppModule);",
      'const app = await NestFactory.createApplicationContext(AppModule, { logger: false });',
      'const redis = new Redis(url);',
      "const q = new WorkQueue(redis, 'greet', { prefix, logger: false });",
      'const { id } = await q.add({ n: 7 });',
      'let info;',
      "for (let i = 0; i < 400 && info?.state !== 'completed'; i++) { await new Promise((r) => setTimeout(r, 50)); info = await q.getJob(id); }",
      'console.log(info.result);',
      'await app.close();',
      "for (const k of await redis.keys(prefix + ':*')) await redis.del(k);",
      'redis.disconnect();',
    ].join('\n');
    writeFileSync(join(project, 'greet.app.mjs'), app);
    const run = (mode: string) =>
      execFileSync(process.execPath, ['greet.app.mjs'], {
        cwd: project,
        encoding: 'utf8',
        env: { ...process.env, MODE: mode },
        timeout: 60_000,
      }).trim();
    expect(run('thread')).toBe('hello 7 undefined');
    expect(run('process')).toBe('hello 7 function');
  });

  it('guards against the dual-package hazard: a CommonJS and an ESM copy agree on tokens and metadata', () => {
    // An app that loads both copies (e.g. a CJS app with an ESM dependency that imports the
    // package): queue tokens, the options token and metadata keys are plain strings, so a
    // processor decorated with one copy is found by the other (whose internal accessor reads
    // the same metadata keys).
    const out = node(
      [
        "import 'reflect-metadata';",
        "import { createRequire } from 'node:module';",
        "import * as esm from 'nestjs-work-queue';",
        "const cjs = createRequire(import.meta.url)('nestjs-work-queue');",
        'class FromEsm {}',
        "esm.Processor('emails')(FromEsm);",
        'class FromCjs {}',
        "cjs.Processor('emails')(FromCjs);",
        'const [key, ...more] = Reflect.getOwnMetadataKeys(FromEsm);',
        "const sameKey = typeof key === 'string' && more.length === 0 && Reflect.getOwnMetadataKeys(FromCjs).join() === key;",
        'const readByCjs = Reflect.getOwnMetadata(key, FromEsm);',
        'const readByEsm = Reflect.getOwnMetadata(key, FromCjs);',
        "console.log(esm.WorkQueueModule !== cjs.WorkQueueModule, esm.getQueueToken('a') === cjs.getQueueToken('a'), typeof esm.WORK_QUEUE_MODULE_OPTIONS, esm.WORK_QUEUE_MODULE_OPTIONS === cjs.WORK_QUEUE_MODULE_OPTIONS, sameKey, readByCjs.queueName, readByEsm.queueName);",
      ].join('\n'),
    );
    expect(out.trim()).toBe('true true string true true emails emails');
  });
}
