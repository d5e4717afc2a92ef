// The README and the docs/ pages, checked like code: every ```ts block type-checks against the
// sources, every relative link and #anchor leads somewhere, the README stays short, and the
// indexes (README.md, docs/README.md) list every page.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** README.md and every docs/**\/*.md, as repository paths ('docs/core-api.md'). */
function pages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const path = posix.join(dir, e.name);
      if (e.isDirectory()) return walk(path);
      return e.name.endsWith('.md') ? [path] : [];
    });
  return ['README.md', ...walk('docs').sort()];
}

const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** Lines of a page as `wc -l` counts them. */
const lineCount = (md: string): number => md.split('\n').length - (md.endsWith('\n') ? 1 : 0);

/** Every ```ts block of a page, in order. */
function tsBlocks(md: string): string[] {
  return [...md.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** A page without its fenced code blocks (their lines kept, emptied). */
function withoutCodeBlocks(md: string): string {
  return md.replace(/^( *)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[^\n]*$/gm, (block) =>
    block.replace(/[^\n]/g, ''),
  );
}

/** A page without its code: fenced blocks (their lines kept, emptied) and inline code spans. */
function prose(md: string): string {
  return withoutCodeBlocks(md).replace(/`[^`\n]*`/g, '``');
}

/** The ATX headings of a page, outside code: level and raw text. */
function headings(md: string): { level: number; text: string }[] {
  return [
    ...withoutCodeBlocks(md).matchAll(/^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm),
  ].map((m) => ({ level: m[1]!.length, text: m[2]! }));
}

/** A heading's text as GitHub renders it (inline markup gone), before slugging. */
function headingText(raw: string): string {
  return raw
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[`*]/g, '') // code and emphasis marks
    .trim();
}

/**
 * GitHub's heading anchor (github-slugger): lowercase, every character that is not a letter, a
 * digit, `_`, `-` or a space dropped, each space a hyphen; a repeated slug gets `-1`, `-2`, ….
 */
function slug(text: string, seen: Map<string, number> = new Map()): string {
  const base = headingText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
  let s = base;
  let n = seen.get(base) ?? 0;
  if (seen.has(base)) {
    do s = `${base}-${++n}`;
    while (seen.has(s));
  }
  seen.set(base, n);
  if (s !== base) seen.set(s, 0);
  return s;
}

/** The anchors of a page: one per ATX heading (outside code), plus `<a id|name="...">`. */
function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(md)) out.add(slug(h.text, seen));
  for (const m of md.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

interface Link {
  line: number;
  target: string;
}

/** Every `[text](target)` and `![alt](target)` of a page, outside code. */
function linksOf(md: string): Link[] {
  const out: Link[] = [];
  const text = prose(md);
  for (const m of text.matchAll(
    /\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g,
  )) {
    out.push({ line: text.slice(0, m.index).split('\n').length, target: m[1]! });
  }
  return out;
}

/** What the link checker may read: repository paths ('docs/x.md'), directories included. */
interface Files {
  exists(path: string): boolean;
  /** The text of a Markdown page. */
  read(path: string): string;
}

/**
 * The relative links of `page` that lead nowhere: a missing file or folder, a path outside the
 * repository, or a `#anchor` that is not a heading of the target page (for `.md` targets; a
 * link to any other file is checked for the file only). URLs with a scheme are not checked.
 */
function brokenLinks(page: string, md: string, files: Files): string[] {
  const broken: string[] = [];
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    let a = anchors.get(path);
    if (!a) anchors.set(path, (a = anchorsOf(path === page ? md : files.read(path))));
    return a;
  };
  for (const { line, target } of linksOf(md)) {
    const where = `${page}:${line}: ${target}`;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    let path = page;
    if (pathPart !== '') {
      path = pathPart.startsWith('/')
        ? posix.normalize(pathPart.slice(1))
        : posix.join(posix.dirname(page), pathPart);
      path = path.replace(/\/$/, '');
      if (path === '..' || path.startsWith('../') || !files.exists(path)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
    }
    if (anchor !== undefined && path.endsWith('.md') && !anchorsIn(path).has(anchor)) {
      broken.push(`${where} (no heading #${anchor} in ${path})`);
    }
  }
  return broken;
}

/** The pages a page links to (repository paths, anchors dropped). */
function linkedPages(page: string, md: string): Set<string> {
  const out = new Set<string>();
  for (const { target } of linksOf(md)) {
    const path = target.split('#')[0]!;
    if (path === '' || /^[a-z][a-z0-9+.-]*:/i.test(path)) continue;
    out.add(posix.join(posix.dirname(page), decodeURIComponent(path)));
  }
  return out;
}

const disk: Files = {
  exists: (path) => existsSync(join(root, path)),
  read,
};

describe('the link checker', () => {
  const made: Record<string, string> = {
    'docs/a.md': [
      '# Page A',
      '',
      '## Set-up & `npm ci`',
      '## Coming from @nestjs/bullmq',
      '## Notes',
      '## Notes',
      '',
      '```ts',
      '// [not a link](nowhere.md) inside code',
      '```',
      '',
      'See [setup](#set-up--npm-ci), [bullmq](#coming-from-nestjsbullmq), [2nd](#notes-1),',
      '[B](b.md#details), [root](../README.md), [folder](sub), `[code](gone.md)` and',
      '[web](https://example.com/x.md#nope).',
    ].join('\n'),
    'docs/b.md': '# B\n\n## Details\n',
    'docs/sub': '',
    'README.md': '# Readme\n',
  };
  const files: Files = {
    exists: (path) => path in made,
    read: (path) => made[path] ?? '',
  };

  it('computes GitHub anchors: punctuation dropped, spaces to hyphens, repeats numbered', () => {
    expect([...anchorsOf(made['docs/a.md']!)]).toEqual([
      'page-a',
      'set-up--npm-ci',
      'coming-from-nestjsbullmq',
      'notes',
      'notes-1',
    ]);
  });

  it('passes a page whose every link leads somewhere', () => {
    expect(brokenLinks('docs/a.md', made['docs/a.md']!, files)).toEqual([]);
  });

  it('reports a missing file, a missing anchor, and a path out of the repository', () => {
    const page = [
      '# Broken',
      '[gone](gone.md) [bad anchor](b.md#nothing) [here](#broken) [self](#nope)',
      '![img](pic.png) [out](../../etc/passwd)',
    ].join('\n');
    expect(brokenLinks('docs/c.md', page, files)).toEqual([
      'docs/c.md:2: gone.md (no such file)',
      'docs/c.md:2: b.md#nothing (no heading #nothing in docs/b.md)',
      'docs/c.md:2: #nope (no heading #nope in docs/c.md)',
      'docs/c.md:3: pic.png (no such file)',
      'docs/c.md:3: ../../etc/passwd (no such file)',
    ]);
  });
});

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
