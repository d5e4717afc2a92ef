// The import rules of .dependency-cruiser.cjs (layers from scripts/layers.cjs): the tree keeps
// them, each rule fails on a made-up tree that breaks it, every part of lib/ is in a layer, and
// docs/internals/architecture.md shows the layers as they are.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult } from 'dependency-cruiser';

const root = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);
const config = require(join(root, '.dependency-cruiser.cjs')) as {
  forbidden: object[];
};
const { LAYERS } = require(join(root, 'scripts/layers.cjs')) as {
  LAYERS: { name: string; paths: string[] }[];
};

async function violations(baseDir: string, dirs: string[], tsConfig?: string): Promise<string[]> {
  const result = await cruise(
    dirs,
    {
      ruleSet: { forbidden: config.forbidden } as never,
      validate: true,
      baseDir,
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      outputType: 'json',
      ...(tsConfig ? { tsConfig: { fileName: tsConfig } } : {}),
    },
    { extensions: ['.ts', '.cts', '.mts', '.js', '.cjs', '.mjs'] },
  );
  const out = (
    typeof result.output === 'string' ? JSON.parse(result.output) : result.output
  ) as ICruiseResult;
  return out.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
}

describe('import rules', () => {
  it('the tree has no import cycle and no import against the layers', async () => {
    const dirs = ['lib', 'src', 'sample', 'test', 'tools', 'scripts'];
    expect(await violations(root, dirs, join(root, 'tsconfig.json'))).toEqual([]);
  }, 60_000);

  it('each rule fails on a tree that breaks it (a cycle through type imports, an import up, src past internal.ts, …)', async () => {
    // Inside the repository, so that `@nestjs/common` resolves to node_modules as it would.
    const dir = join(root, 'test', '.layers-fixture');
    rmSync(dir, { recursive: true, force: true });
    const files: Record<string, string> = {
      // a cycle of type imports inside one layer
      'lib/queue/a.ts': "import type { B } from './b.js';\nexport type A = B | 1;\n",
      'lib/queue/b.ts': "import type { A } from './a.js';\nexport type B = A | 2;\n",
      // the queue layer reaching up into the worker layer
      'lib/queue/c.ts': "import type { W } from '../worker/w.js';\nexport type C = W;\n",
      'lib/worker/w.ts': 'export type W = string;\n',
      // the core importing Nest, and a type file importing at run time
      'lib/util/u.ts':
        "import { Injectable } from '@nestjs/common';\nexport const u = Injectable;\n",
      'lib/types/t.ts': "import { u } from '../util/u.js';\nexport const t = u;\n",
      // src/ past lib/internal.ts, and an optional peer outside its folder
      'lib/internal.ts': "export type { W } from './worker/w.js';\n",
      'src/s.ts':
        "import type { C } from '../lib/queue/c.js';\nimport type { W } from '../lib/internal.js';\nexport type S = C | W;\n",
      'src/m.ts': "import { Registry } from 'prom-client';\nexport const m = Registry;\n",
      // the sample past the package's entry points
      'src/index.ts': 'export const i = 1;\n',
      'sample/app.ts':
        "import { i } from '../src/index.js';\nimport type { S } from '../src/s.js';\nexport type X = S | typeof i;\n",
    };
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    try {
      const found = await violations(dir, ['lib', 'src', 'sample']);
      const rules = new Set(found.map((v) => v.split(':')[0]));
      expect([...rules].sort()).toEqual(
        [
          'core-without-nest',
          'layer-queue-up',
          'nest-through-internal',
          'no-circular',
          'optional-peer-prom-client',
          'sample-public-entries',
          'types-are-types',
          'types-import-types',
        ].sort(),
      );
      expect(found).toContain('no-circular: lib/queue/a.ts -> lib/queue/b.ts');
      expect(found).toContain('layer-queue-up: lib/queue/c.ts -> lib/worker/w.ts');
      expect(found).toContain('nest-through-internal: src/s.ts -> lib/queue/c.ts');
      // lib/internal.ts is the way in: no violation for it
      expect(found.some((v) => v.includes('src/s.ts -> lib/internal.ts'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('every file and folder of lib/ is in a layer', () => {
    const paths = LAYERS.flatMap((l) => l.paths);
    const entries = readdirSync(join(root, 'lib'), { withFileTypes: true }).map(
      (e) => `lib/${e.name}${e.isDirectory() ? '/' : ''}`,
    );
    expect(entries.filter((e) => !paths.includes(e))).toEqual([]);
    expect(paths.filter((p) => p.startsWith('lib/') && !entries.includes(p))).toEqual([]);
  });

  it('docs/internals/architecture.md shows the layers of scripts/layers.cjs', async () => {
    const doc = (await import(join(root, 'scripts/layers-doc.mjs'))) as {
      PAGE: string;
      expectedPage(page?: string): string;
    };
    const page = readFileSync(doc.PAGE, 'utf8');
    // Out of date? `node scripts/layers-doc.mjs` rewrites the section.
    expect(page).toBe(doc.expectedPage(page));
  });
});
