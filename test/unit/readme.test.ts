// The README and the docs/ pages, checked like code: every ```ts block type-checks against the
// sources, every relative link and #anchor leads somewhere, the README stays short, and the
// indexes (README.md, docs/README.md) list every page.
// The Markdown reading and the link checker are markdown.ts (tested in link-checker.test.ts).
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import {
  brokenLinks,
  disk,
  headings,
  lineCount,
  linkedPages,
  linksOf,
  pages,
  read,
  root,
  slug,
  tsBlocks,
} from './markdown.js';

describe('README and docs/', () => {
  const all = pages();

  it('has TypeScript examples, and every one of them type-checks against the sources', () => {
    const dir = join(root, 'test', '.readme');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    let count = 0;
    for (const page of all) {
      tsBlocks(read(page)).forEach((code, i) => {
        // Named after the page, so that tsc's messages say where a block is.
        const name = `${page.replace(/\.md$/, '').replace(/[/.]/g, '_')}-block-${i + 1}.ts`;
        writeFileSync(join(dir, name), code);
        count++;
      });
    }
    expect(count).toBeGreaterThanOrEqual(10);
    // The package's entry points, as a user imports them.
    const paths: Record<string, string[]> = {
      'nestjs-work-queue': ['../../src/index.ts'],
      'nestjs-work-queue/core': ['../../lib/index.ts'],
      'nestjs-work-queue/health': ['../../src/health/index.ts'],
      'nestjs-work-queue/metrics': ['../../src/metrics/index.ts'],
      'nestjs-work-queue/otel': ['../../src/otel/index.ts'],
      'nestjs-work-queue/bull-board': ['../../src/bull-board/index.ts'],
      'nestjs-work-queue/testing': ['../../src/testing/index.ts'],
    };
    // Every code entry point of package.json has its mapping here.
    const exports = (JSON.parse(read('package.json')) as { exports: Record<string, unknown> })
      .exports;
    const entries = Object.keys(exports)
      .filter((e) => e !== './package.json')
      .map((e) => posix.join('nestjs-work-queue', e));
    expect(entries.filter((e) => !(e in paths))).toEqual([]);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.json',
        compilerOptions: { noEmit: true, baseUrl: '.', paths },
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
  }, 180_000);

  it('has every relative link and #anchor of every page lead somewhere', () => {
    expect(all.length).toBeGreaterThan(10);
    expect(all.flatMap((page) => brokenLinks(page, read(page), disk))).toEqual([]);
  });

  it('keeps the README at most 300 lines', () => {
    expect(lineCount(read('README.md'))).toBeLessThanOrEqual(300);
  });

  it('lists every docs page in docs/README.md and in the README', () => {
    const docs = all.filter((p) => p !== 'README.md' && p !== 'docs/README.md');
    for (const index of ['docs/README.md', 'README.md']) {
      const linked = linkedPages(index, read(index));
      expect({ index, missing: docs.filter((p) => !linked.has(p)) }).toEqual({
        index,
        missing: [],
      });
    }
  });

  it('gives every page longer than 100 lines a table of contents of its sections', () => {
    const missing: string[] = [];
    for (const page of all) {
      const md = read(page);
      if (lineCount(md) <= 100) continue;
      const seen = new Map<string, number>();
      const own = new Set(
        linksOf(md)
          .map((l) => l.target)
          .filter((t) => t.startsWith('#'))
          .map((t) => t.slice(1)),
      );
      for (const h of headings(md)) {
        const s = slug(h.text, seen);
        if (h.level === 2 && !own.has(s)) missing.push(`${page}: #${s}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('names only files that exist when it points at the sources in code spans', () => {
    // `lib/…`, `src/…`, `test/…` paths in inline code: stale ones are how the docs drift. A path
    // of a consumer app's own (`src/app.module.ts`) is one of an app in test/consumers/.
    const apps = readdirSync(join(root, 'test/consumers'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(root, 'test/consumers', e.name));
    const stale: string[] = [];
    for (const page of all) {
      for (const m of read(page).matchAll(
        /`((?:lib|src|test|sample|docs|tools|scripts)\/[^`\s*…<]+)`/g,
      )) {
        const path = m[1]!.replace(/[:,.]$/, '');
        if ([root, ...apps].every((dir) => !existsSync(join(dir, path)))) {
          stale.push(`${page}: ${path}`);
        }
      }
    }
    expect(stale).toEqual([]);
  });
});
