import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every ```ts block of the README, in order. */
function readmeBlocks(): string[] {
  const md = readFileSync(join(root, 'README.md'), 'utf8');
  return [...md.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

describe('README', () => {
  it('has TypeScript examples, and every one of them type-checks against the sources', () => {
    const blocks = readmeBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    const dir = join(root, 'test', '.readme');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    blocks.forEach((code, i) => writeFileSync(join(dir, `block-${i + 1}.ts`), code));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.json',
        compilerOptions: {
          noEmit: true,
          baseUrl: '.',
          // The package's entry points, as a user imports them.
          paths: {
            'nestjs-work-queue': ['../../src/index.ts'],
            'nestjs-work-queue/core': ['../../lib/index.ts'],
            'nestjs-work-queue/health': ['../../src/health/index.ts'],
            'nestjs-work-queue/metrics': ['../../src/metrics/index.ts'],
            'nestjs-work-queue/otel': ['../../src/otel/index.ts'],
            'nestjs-work-queue/bull-board': ['../../src/bull-board/index.ts'],
          },
        },
        include: ['*.ts'],
      }),
    );
    let output = '';
    try {
      execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (e) {
      output = String((e as { stdout?: string }).stdout ?? e);
    }
    expect(output).toBe('');
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);
});
