// Cases of package.test.ts (run there, against its one packed project, last: they need the peers
// the cases before them linked): a consumer type-checks in each module resolution.
import { expect, it } from '@jest/globals';
import { link, typeCheck } from './packed-project.js';

/** A TypeScript consumer of the entries, type-checked as ESM, CommonJS and node10. */
export function consumerTypings(): void {
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
}
