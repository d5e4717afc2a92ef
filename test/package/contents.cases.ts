// Cases of package.test.ts (run there, against its one packed project): what the package ships,
// and what its entries and typings leave out.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from '@jest/globals';
import { node, pkg, project, run } from './packed-project.js';

/** The files of the package: both builds and the typings, nothing else. */
export function shippedFiles(): void {
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
    // The license package.json names; source maps that lead somewhere: a map comment names a
    // shipped map, which embeds its sources (none is shipped). (The CJS build had comments
    // naming maps that do not exist, the ESM maps sources that are not shipped.)
    expect(files).toContain('./LICENSE');
    // The README's links to the docs work from the package too.
    expect(files).toEqual(
      expect.arrayContaining(['./README.md', './docs/README.md', './docs/core-api.md']),
    );
    expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    const broken = files
      .filter((f) => /\.c?js$/.test(f))
      .filter((f) => {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(
          readFileSync(join(dir, f), 'utf8'),
        )?.[1];
        if (url === undefined) return false;
        const map = join(dir, dirname(f), url);
        if (!existsSync(map)) return true;
        const parsed = JSON.parse(readFileSync(map, 'utf8')) as { sourcesContent?: unknown[] };
        return !parsed.sourcesContent?.every((c) => typeof c === 'string');
      });
    expect(broken).toEqual([]);
  });
}

/** What the entries and the typings leave out (run after entryPoints(): needs the Nest peers). */
export function publicSurface(): void {
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
}
