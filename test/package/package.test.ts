// The published package: built, packed with `npm pack`, unpacked into a fresh project and
// loaded from plain Node, as a user would. Dependencies are linked from this repository's
// node_modules (no network): only ioredis for the core entry, the Nest peers for the others.
import { execFileSync } from 'node:child_process';
import {
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

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};

let project: string;

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: 'pipe', timeout: 120_000 });
}

/** Make `name` resolvable from the project by linking this repository's copy. */
function link(name: string): void {
  const target = join(project, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(root, 'node_modules', name), target, 'dir');
}

function node(code: string, type: 'module' | 'commonjs' = 'module'): string {
  return run(process.execPath, ['--input-type=' + type, '-e', code], project);
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
}, 180_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships the build, the Lua scripts and the typings, and no sources or tests', () => {
    const files = run('find', ['.', '-type', 'f'], join(project, 'node_modules', pkg.name)).split(
      '\n',
    );
    expect(files).toEqual(
      expect.arrayContaining([
        './dist/lib/scripts/lease.lua',
        './dist/src/index.d.ts',
        './dist/lib/index.js',
      ]),
    );
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
    // A NestJS 11 app is CommonJS: it loads this ESM package through require(esm) (Node >= 20.19).
    const cjs = node(
      "const m = require('nestjs-work-queue'); console.log(typeof m.WorkQueueModule, typeof require('nestjs-work-queue/core').WorkQueue);",
      'commonjs',
    );
    expect(cjs.trim()).toBe('function function');
  });

  it('type-checks a consumer file against the shipped typings', () => {
    writeFileSync(
      join(project, 'consumer.ts'),
      [
        "import { Redis } from 'ioredis';",
        "import { WorkQueue, WorkQueueModule, type Job } from 'nestjs-work-queue';",
        "import { Worker } from 'nestjs-work-queue/core';",
        "import { WorkQueueHealthIndicator } from 'nestjs-work-queue/health';",
        'const q = new WorkQueue<{ to: string }>(new Redis(), "emails");',
        'const w = new Worker(q, async (job: Job<{ to: string }>) => job.data.to.length);',
        'export const used = [WorkQueueModule, WorkQueueHealthIndicator, w, q.add({ to: "x" })];',
        '// @ts-expect-error the payload type is checked',
        'void q.add({ nope: 1 });',
      ].join('\n'),
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          noEmit: true,
          skipLibCheck: true,
          experimentalDecorators: true,
          types: [],
        },
        files: ['consumer.ts'],
      }),
    );
    link('@types/node');
    let output = '';
    try {
      run(
        process.execPath,
        [join(root, 'node_modules/typescript/bin/tsc'), '-p', project],
        project,
      );
    } catch (e) {
      output = String((e as { stdout?: string }).stdout ?? e);
    }
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

  it('every package imported by lib/ and src/ is a dependency or a peer; lib/ imports only ioredis', () => {
    const declared = new Set([
      ...Object.keys(pkg.dependencies),
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
    expect([...libImports]).toEqual(['ioredis']);
  });
});
