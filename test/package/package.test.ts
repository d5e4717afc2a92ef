// The published package: built, packed with `npm pack`, unpacked into a fresh project and
// loaded from plain Node, as a user would. Dependencies are linked from this repository's
// node_modules (no network): ioredis and croner for the core entry, the Nest peers for the others.
// It is a dual package: ESM (dist/) for `import`, CommonJS (dist/cjs/) for `require`. Real
// Nest apps (jest, vitest, nest build) install it in test/consumers/ (npm run test:consumers).
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { deleteKeys, testRedisUrl, uniqueName } from '../support/keys.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

let project: string;

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: 'pipe',
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
}

/** Make `name` resolvable from the project by linking this repository's copy. */
function link(name: string): void {
  const target = join(project, 'node_modules', name);
  if (existsSync(target)) return;
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(root, 'node_modules', name), target, 'dir');
}

function node(code: string, type: 'module' | 'commonjs' = 'module', flags: string[] = []): string {
  return run(process.execPath, [...flags, '--input-type=' + type, '-e', code], project);
}

/** Runs tsc on `files` (written to `dir` under the project) with these compiler options. */
function typeCheck(
  dir: string,
  packageType: 'module' | 'commonjs',
  compilerOptions: Record<string, unknown>,
  files: Record<string, string>,
): string {
  const at = join(project, dir);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'package.json'), JSON.stringify({ private: true, type: packageType }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(at, name), text);
  writeFileSync(
    join(at, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: 'es2022',
        noEmit: true,
        skipLibCheck: true,
        experimentalDecorators: true,
        types: [],
        ...compilerOptions,
      },
      files: Object.keys(files),
    }),
  );
  try {
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', at], at);
    return '';
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'wq-pkg-'));
  // `npm pack` runs `prepack` (the build) first.
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', project], root)
    .trim()
    .split('\n')
    .pop()!;
  const into = join(project, 'node_modules', pkg.name);
  mkdirSync(into, { recursive: true });
  run('tar', ['-xzf', join(project, tarball), '-C', into, '--strip-components=1'], project);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', type: 'module', private: true }),
  );
  link('ioredis');
  for (const dep of Object.keys(pkg.dependencies ?? {})) link(dep);
}, 180_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships both builds (the Lua scripts embedded in each) and the typings, and no sources or tests', () => {
    const files = run('find', ['.', '-type', 'f'], join(project, 'node_modules', pkg.name)).split(
      '\n',
    );
    expect(files).toEqual(
      expect.arrayContaining([
        './dist/lib/scripts/sources.generated.js',
        './dist/src/index.d.ts',
        './dist/lib/index.js',
        './dist/cjs/lib/scripts/sources.generated.cjs',
        './dist/cjs/src/index.d.cts',
        './dist/cjs/src/index.cjs',
        './dist/cjs/src/health/index.cjs',
        './dist/cjs/src/metrics/index.cjs',
        './dist/cjs/src/otel/index.cjs',
        './dist/src/metrics/index.d.ts',
        './dist/src/otel/index.d.ts',
        './dist/cjs/src/bull-board/index.cjs',
        './dist/src/bull-board/index.d.ts',
        './dist/cjs/src/testing/index.cjs',
        './dist/src/testing/index.d.ts',
        './dist/cjs/lib/index.cjs',
      ]),
    );
    // Nothing reads .lua files at run time: none is shipped.
    expect(files.filter((f) => f.endsWith('.lua'))).toEqual([]);
    // CommonJS has no import.meta: the CJS build must not use it (outside comments).
    const dir = join(project, 'node_modules', pkg.name);
    const metaUsers = files
      .filter((f) => f.startsWith('./dist/cjs/') && f.endsWith('.cjs'))
      .filter((f) =>
        /\bimport\.meta\b/.test(
          readFileSync(join(dir, f), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''),
        ),
      );
    expect(metaUsers).toEqual([]);
    expect(files.filter((f) => /\/(test|sample)\/|\.ts$/.test(f) && !f.endsWith('.d.ts'))).toEqual(
      [],
    );
  });

  it('loads nestjs-work-queue/core in plain Node without @nestjs/* installed', () => {
    const out = node(
      "const m = await import('nestjs-work-queue/core'); console.log(typeof m.WorkQueue, typeof m.Worker, typeof m.WorkQueueError);",
    );
    expect(out.trim()).toBe('function function function');
    expect(() => node("await import('@nestjs/common')")).toThrow();
  });

  it('loads the Nest entry and the health entry once the peers are installed, from ESM and from CommonJS', () => {
    for (const peer of [
      '@nestjs/common',
      '@nestjs/core',
      '@nestjs/terminus',
      'reflect-metadata',
      'rxjs',
    ])
      link(peer);
    const esm = node(
      "const m = await import('nestjs-work-queue'); const h = await import('nestjs-work-queue/health'); console.log(typeof m.WorkQueueModule, typeof m.WorkQueue, typeof h.WorkQueueHealthIndicator);",
    );
    expect(esm.trim()).toBe('function function function');
    // `require` gets the CommonJS build. (Nest 12's own packages are ES modules, which a
    // CommonJS app loads through require(esm); the core entry needs none: see the Lua test.)
    const cjs = node(
      [
        "const m = require('nestjs-work-queue');",
        "const resolved = ['nestjs-work-queue', 'nestjs-work-queue/core', 'nestjs-work-queue/health'].map((s) => require.resolve(s).replace(/^.*node_modules.nestjs-work-queue./, ''));",
        "console.log(typeof m.WorkQueueModule, typeof require('nestjs-work-queue/core').WorkQueue, typeof require('nestjs-work-queue/health').WorkQueueHealthIndicator, resolved.join(' '));",
      ].join('\n'),
      'commonjs',
    );
    expect(cjs.trim()).toBe(
      'function function function dist/cjs/src/index.cjs dist/cjs/lib/index.cjs dist/cjs/src/health/index.cjs',
    );
  });

  it('loads the metrics and otel entries once their optional peers are installed, from ESM and from CommonJS', () => {
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs'])
      if (!existsSync(join(project, 'node_modules', peer))) link(peer);
    const load =
      "const m = await import('nestjs-work-queue/metrics'); const o = await import('nestjs-work-queue/otel');";
    // Without the peer, the entry fails to load (nothing else needs it).
    expect(() => node("await import('nestjs-work-queue/metrics')")).toThrow(/prom-client/);
    expect(() => node("await import('nestjs-work-queue/otel')")).toThrow(/@opentelemetry\/api/);
    link('prom-client');
    link('@opentelemetry/api');
    const esm = node(
      `${load} console.log(typeof m.registerQueueMetrics, typeof m.WorkQueueMetricsModule, typeof o.instrumentQueue, typeof o.WorkQueueTracingModule);`,
    );
    expect(esm.trim()).toBe('function function function function');
    const cjs = node(
      [
        "const m = require('nestjs-work-queue/metrics');",
        "const o = require('nestjs-work-queue/otel');",
        "const resolved = ['nestjs-work-queue/metrics', 'nestjs-work-queue/otel'].map((s) => require.resolve(s).replace(/^.*node_modules.nestjs-work-queue./, ''));",
        "console.log(typeof m.registerQueueMetrics, typeof o.instrumentWorker, resolved.join(' '));",
      ].join('\n'),
      'commonjs',
    );
    expect(cjs.trim()).toBe(
      'function function dist/cjs/src/metrics/index.cjs dist/cjs/src/otel/index.cjs',
    );
    const pkgMeta = pkg as unknown as {
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    expect(pkgMeta.peerDependenciesMeta['prom-client']).toEqual({ optional: true });
    expect(pkgMeta.peerDependenciesMeta['@opentelemetry/api']).toEqual({ optional: true });
  });

  it('loads the bull-board entry with its optional peer @bull-board/api, from ESM and CommonJS, typed in each resolution', () => {
    link('@bull-board/api');
    link('@types/node');
    const esm = node(
      "const b = await import('nestjs-work-queue/bull-board'); const { BaseAdapter } = await import('@bull-board/api/dist/queueAdapters/base.js'); console.log(typeof b.WorkQueueAdapter, b.WorkQueueAdapter.prototype instanceof BaseAdapter);",
    );
    expect(esm.trim()).toBe('function true');
    const cjs = node(
      "console.log(typeof require('nestjs-work-queue/bull-board').WorkQueueAdapter, require.resolve('nestjs-work-queue/bull-board').replace(/^.*node_modules.nestjs-work-queue./, ''));",
      'commonjs',
    );
    expect(cjs.trim()).toBe('function dist/cjs/src/bull-board/index.cjs');
    const board = [
      "import { Redis } from 'ioredis';",
      "import { WorkQueue } from 'nestjs-work-queue/core';",
      "import { WorkQueueAdapter } from 'nestjs-work-queue/bull-board';",
      "import type { BaseAdapter } from '@bull-board/api/dist/queueAdapters/base.js';",
      'const q = new WorkQueue<{ to: string }>(new Redis(), "emails");',
      'export const adapter: BaseAdapter = new WorkQueueAdapter(q, { readOnlyMode: true });',
      '// @ts-expect-error options are checked',
      'void new WorkQueueAdapter(q, { readOnly: true });',
    ].join('\n');
    for (const [dir, type, options] of [
      ['board-esm', 'module', { module: 'nodenext', moduleResolution: 'nodenext' }],
      ['board-cjs', 'commonjs', { module: 'nodenext', moduleResolution: 'nodenext' }],
      [
        'board-node10',
        'commonjs',
        { module: 'commonjs', moduleResolution: 'node', esModuleInterop: true },
      ],
    ] as const)
      expect(typeCheck(dir, type, options, { 'board.ts': board })).toBe('');
  });

  it('loads the testing entry from ESM and CommonJS without testcontainers (an optional peer); the main entry does not load it', () => {
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs'])
      if (!existsSync(join(project, 'node_modules', peer))) link(peer);
    expect(existsSync(join(project, 'node_modules', 'testcontainers'))).toBe(false);
    const names =
      'typeof t.startTestRedis, typeof t.uniquePrefix, typeof t.WorkQueueTestingModule.forRoot, typeof t.whenIdle, typeof t.removeKeys';
    const esm = node(`const t = await import('nestjs-work-queue/testing'); console.log(${names});`);
    expect(esm.trim()).toBe('function function function function function');
    const cjs = node(
      [
        "const t = require('nestjs-work-queue/testing');",
        "const resolved = require.resolve('nestjs-work-queue/testing').replace(/^.*node_modules.nestjs-work-queue./, '');",
        `console.log(${names}, resolved);`,
      ].join('\n'),
      'commonjs',
    );
    expect(cjs.trim()).toBe(
      'function function function function function dist/cjs/src/testing/index.cjs',
    );
    // The main entries never reach it: not at run time (CommonJS: what require loaded)…
    const loaded = node(
      [
        "require('nestjs-work-queue'); require('nestjs-work-queue/core');",
        'const testing = () => Object.keys(require.cache).filter((f) => /[\\/]testing[\\/]|testcontainers/.test(f)).length;',
        "const before = testing(); require('nestjs-work-queue/testing');",
        'console.log(before, testing() > 0);',
      ].join('\n'),
      'commonjs',
    );
    expect(loaded.trim()).toBe('0 true');
    // …and not in the ESM import graph of dist/src/index.js.
    const dist = join(project, 'node_modules', pkg.name, 'dist');
    const seen = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(dist, file), 'utf8');
      // Static imports and re-exports (at a line's start), and dynamic imports; a specifier
      // quoted inside a message string names no file of the package and is skipped.
      const specs = [
        ...text.matchAll(/^(?:import|export)\b[^;]*?from\s*'(\.[^']+)'/gm),
        ...text.matchAll(/^import\s*'(\.[^']+)'/gm),
        ...text.matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g),
      ];
      for (const m of specs) {
        const target = join(dirname(file), m[1]!);
        if (existsSync(join(dist, target))) walk(target);
      }
    };
    walk('src/index.js');
    expect(seen.size).toBeGreaterThan(20);
    expect([...seen].filter((f) => f.includes('testing'))).toEqual([]);
    const meta = (pkg as unknown as { peerDependenciesMeta: Record<string, unknown> })
      .peerDependenciesMeta;
    expect(meta.testcontainers).toEqual({ optional: true });
  });

  it('startTestRedis works from the packed package: REDIS_URL (ESM), else a local redis-server (CommonJS)', () => {
    const esm = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const { startTestRedis } = await import('nestjs-work-queue/testing'); const r = await startTestRedis(); console.log(r.kind, r.url === process.env.REDIS_URL); await r.stop();",
      ],
      project,
      { REDIS_URL: testRedisUrl() },
    );
    expect(esm.trim()).toBe('env true');
    const cjs = run(
      process.execPath,
      [
        '--input-type=commonjs',
        '-e',
        [
          "const net = require('node:net');",
          "const { startTestRedis } = require('nestjs-work-queue/testing');",
          'const answers = (port) => new Promise((r) => { const s = net.connect(port, "127.0.0.1", () => { s.destroy(); r(true); }); s.on("error", () => r(false)); });',
          '(async () => {',
          '  const r = await startTestRedis();',
          '  const port = Number(new URL(r.url).port);',
          '  const up = await answers(port);',
          '  await r.stop();',
          '  console.log(r.kind, up, await answers(port));',
          '})().catch((e) => { console.error(e); process.exit(1); });',
        ].join('\n'),
      ],
      project,
      // No Docker (a TCP Docker host on a port nothing serves), no REDIS_URL.
      { REDIS_URL: '', DOCKER_HOST: 'tcp://127.0.0.1:1' },
    );
    expect(cjs.trim()).toBe('binary true false');
  });

  it('exports the Nest API without its internals (explorer, accessor, registrar); workers come from WorkQueueContext', () => {
    const out = node(
      [
        "const m = await import('nestjs-work-queue');",
        "const internals = ['WorkQueueExplorer', 'WorkQueueMetadataAccessor', 'WorkQueueRegistrar'].filter((n) => n in m);",
        "console.log(internals.join(',') || 'none', typeof m.WorkQueueContext.prototype.getWorker);",
      ].join('\n'),
    );
    expect(out.trim()).toBe('none function');
  });

  it("leaves the Worker's private protocol out of the published typings (ESM and CommonJS)", () => {
    const internal = [
      'registerWorker',
      'heartbeat',
      'deregisterWorker',
      'unparkWorker',
      'reconcile',
      'waitForWork',
      'leaseBatch',
    ];
    const into = join(project, 'node_modules', pkg.name, 'dist');
    for (const file of [
      'lib/queue/queue-base.d.ts',
      'lib/queue/work-queue.d.ts',
      'cjs/lib/queue/queue-base.d.cts',
      'cjs/lib/queue/work-queue.d.cts',
    ]) {
      const dts = readFileSync(join(into, file), 'utf8');
      expect(internal.filter((name) => new RegExp(`\\b${name}\\(`).test(dts))).toEqual([]);
    }
    // Nor the Nest module's seam into sandboxes.
    for (const file of ['lib/types/sandbox.d.ts', 'cjs/lib/types/sandbox.d.cts'])
      expect(readFileSync(join(into, file), 'utf8')).not.toMatch(/wrapJob/);
    // The public calls next to them are still there.
    expect(readFileSync(join(into, 'lib/queue/work-queue.d.ts'), 'utf8')).toMatch(
      /\bcompleteAndLease\(/,
    );
  });

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
    const redis = new Redis(testRedisUrl());
    try {
      await deleteKeys(redis, `${prefix}:*`);
    } finally {
      redis.disconnect();
    }
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
    const redis = new Redis(testRedisUrl());
    try {
      await deleteKeys(redis, `${prefix}:*`);
    } finally {
      redis.disconnect();
    }
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

  const consumer = (ext: '' | '.js') =>
    [
      "import { Redis } from 'ioredis';",
      "import { WorkQueue, WorkQueueModule, type Job } from 'nestjs-work-queue';",
      "import { Worker } from 'nestjs-work-queue/core';",
      "import { WorkQueueHealthIndicator } from 'nestjs-work-queue/health';",
      "import { uniquePrefix, whenIdle, WorkQueueTestingModule } from 'nestjs-work-queue/testing';",
      `import { other } from './other${ext}';`,
      'const q = new WorkQueue<{ to: string }>(new Redis(), "emails");',
      'const w = new Worker(q, async (job: Job<{ to: string }>) => job.data.to.length);',
      'export const used = [WorkQueueModule, WorkQueueHealthIndicator, w, q.add({ to: "x" }), other];',
      'export const testing = [WorkQueueTestingModule.forRoot({ prefix: uniquePrefix() }), whenIdle(q, { timeoutMs: 1_000 })];',
      '// @ts-expect-error whenIdle needs a timeout',
      'void whenIdle(q, {});',
      '// @ts-expect-error the payload type is checked',
      'void q.add({ nope: 1 });',
    ].join('\n');
  const other = 'export const other = 1;\n';

  it('type-checks an ESM consumer (module nodenext, "type": "module") against the .d.ts typings', () => {
    link('@types/node');
    const output = typeCheck(
      'esm-nodenext',
      'module',
      { module: 'nodenext', moduleResolution: 'nodenext' },
      { 'consumer.ts': consumer('.js'), 'other.ts': other },
    );
    expect(output).toBe('');
  });

  it('type-checks a CommonJS consumer (module nodenext, no "type") against the .d.cts typings', () => {
    // Nest 11/12 starters: CommonJS with module nodenext. Against ESM-only typings this is TS1479.
    const output = typeCheck(
      'cjs-nodenext',
      'commonjs',
      { module: 'nodenext', moduleResolution: 'nodenext' },
      { 'consumer.ts': consumer(''), 'other.ts': other },
    );
    expect(output).toBe('');
  });

  it('type-checks a consumer with module commonjs + moduleResolution node (typesVersions)', () => {
    // Older Nest 11 starters: no `exports` support, subpaths come from typesVersions.
    const output = typeCheck(
      'cjs-node10',
      'commonjs',
      { module: 'commonjs', moduleResolution: 'node', esModuleInterop: true },
      { 'consumer.ts': consumer(''), 'other.ts': other },
    );
    expect(output).toBe('');
  });
});

describe('declared dependencies', () => {
  function sources(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? sources(join(dir, e.name))
        : e.name.endsWith('.ts')
          ? [join(dir, e.name)]
          : [],
    );
  }

  it('every package imported by lib/ and src/ is a dependency or a peer; lib/ imports only ioredis and croner', () => {
    const declared = new Set([
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.peerDependencies),
    ]);
    const builtins = new Set(builtinModules);
    const undeclared: string[] = [];
    const libImports = new Set<string>();
    for (const file of [...sources(join(root, 'lib')), ...sources(join(root, 'src'))]) {
      const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const m of text.matchAll(/(?:^|\s)(?:from|import)\s*\(?\s*'([^'.][^']*)'/gm)) {
        const spec = m[1]!;
        if (spec.startsWith('node:') || builtins.has(spec)) continue;
        const name = spec.startsWith('@')
          ? spec.split('/').slice(0, 2).join('/')
          : spec.split('/')[0]!;
        if (!declared.has(name)) undeclared.push(`${relative(root, file)}: ${spec}`);
        if (relative(root, file).startsWith('lib/')) libImports.add(name);
      }
    }
    expect(undeclared).toEqual([]);
    expect([...libImports].sort()).toEqual(['croner', 'ioredis']);
  });

  it('takes ioredis as a peer (the app uses its own client), installed here for development', () => {
    // The one dependency: croner, for cron schedules (no dependencies of its own).
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(['croner']);
    expect(pkg.peerDependencies.ioredis).toBe('^5.11.1 || ^6.0.0');
    for (const peer of Object.keys(pkg.peerDependencies)) {
      expect([peer, pkg.devDependencies[peer] !== undefined]).toEqual([peer, true]);
    }
  });
});
