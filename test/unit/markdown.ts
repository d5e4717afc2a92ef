// The README and the docs/ pages read as Markdown, for readme.test.ts: their code blocks,
// headings and GitHub's anchors for them, their links, and the link checker (whose own tests are
// link-checker.test.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** README.md and every docs/**\/*.md, as repository paths ('docs/core-api.md'). */
export function pages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const path = posix.join(dir, e.name);
      if (e.isDirectory()) return walk(path);
      return e.name.endsWith('.md') ? [path] : [];
    });
  return ['README.md', ...walk('docs').sort()];
}

export const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** Lines of a page as `wc -l` counts them. */
export const lineCount = (md: string): number =>
  md.split('\n').length - (md.endsWith('\n') ? 1 : 0);

/** Every ```ts block of a page, in order. */
export function tsBlocks(md: string): string[] {
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
export function headings(md: string): { level: number; text: string }[] {
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
export function slug(text: string, seen: Map<string, number> = new Map()): string {
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
export function anchorsOf(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(md)) out.add(slug(h.text, seen));
  for (const m of md.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

export interface Link {
  line: number;
  target: string;
}

/** Every `[text](target)` and `![alt](target)` of a page, outside code. */
export function linksOf(md: string): Link[] {
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
export interface Files {
  exists(path: string): boolean;
  /** The text of a Markdown page. */
  read(path: string): string;
}

/**
 * The relative links of `page` that lead nowhere: a missing file or folder, a path outside the
 * repository, or a `#anchor` that is not a heading of the target page (for `.md` targets; a
 * link to any other file is checked for the file only). URLs with a scheme are not checked.
 */
export function brokenLinks(page: string, md: string, files: Files): string[] {
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
export function linkedPages(page: string, md: string): Set<string> {
  const out = new Set<string>();
  for (const { target } of linksOf(md)) {
    const path = target.split('#')[0]!;
    if (path === '' || /^[a-z][a-z0-9+.-]*:/i.test(path)) continue;
    out.add(posix.join(posix.dirname(page), decodeURIComponent(path)));
  }
  return out;
}

export const disk: Files = {
  exists: (path) => existsSync(join(root, path)),
  read,
};
