import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { tsFiles as sources } from '../support/source-files.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

const importsOf = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!);

describe('src imports', () => {
  it('only src/health imports @nestjs/terminus (an optional peer)', () => {
    const offenders = sources(join(root, 'src'))
      .filter((f) => !relative(root, f).startsWith('src/health/'))
      .filter((f) => importsOf(f).some((i) => i.startsWith('@nestjs/terminus')));
    expect(offenders).toEqual([]);
  });

  it('imports no Nest internals (deep paths)', () => {
    const deep = sources(join(root, 'src')).flatMap((f) =>
      importsOf(f)
        .filter((i) => /^@nestjs\/[^/]+\/./.test(i))
        .map((i) => `${relative(root, f)}: ${i}`),
    );
    expect(deep).toEqual([]);
  });
});
