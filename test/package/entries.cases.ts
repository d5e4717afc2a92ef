// Cases of package.test.ts (run there, against its one packed project, in this order: an entry
// is loaded before and after the peers it needs are linked): every entry point, from ESM and from
// CommonJS.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from '@jest/globals';
import { testRedisUrl } from '../support/keys.js';
import { link, node, pkg, project, run, typeCheck } from './packed-project.js';

/** Each entry point loads, with its peers and only with them. */
export function entryPoints(): void {
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
}
