// The package's declared dependencies against what lib/ and src/ import (no build needed: the
// packed package itself is package.test.ts's).
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { tsFiles as sources } from '../support/source-files.js';
import { pkg, root } from './packed-project.js';

describe('declared dependencies', () => {
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
