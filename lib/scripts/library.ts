/**
 * The Lua library (lib/scripts/lib/*.lua) as top-level definitions, and which of them a script
 * reaches: a script is assembled with those alone (assemble.ts).
 */
import { LIBRARY_SOURCES, SCRIPT_SOURCES } from './sources.generated.js';

/** Library files in dependency order: a definition may use only those before it. */
const LIBRARY_ORDER = [
  'base',
  'data',
  'times',
  'meta',
  'events',
  'history',
  'ids',
  'groups',
  'group_runs',
  'flows',
  'placement',
  'schedules',
  'handoff',
  'reclaim',
  'flow_control',
  'adding',
  'group_adding',
  'group_leasing',
  'leasing',
  'flow_parents',
  'completed',
];

export interface Chunk {
  readonly names: readonly string[];
  readonly text: string;
}

/** A Lua identifier (or keyword). */
export const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;
/** Lua without its comments: names in comments neither pull definitions in nor use keys. */
export const code = (lua: string) => lua.replace(/--.*$/gm, '');
/** Split a library file into top-level definitions, each with the comment above it. */
function chunks(source: string): Chunk[] {
  const out: Chunk[] = [];
  let lines: string[] = [];
  let inFunction = false;
  const close = (name: string[]) => {
    out.push({ names: name, text: lines.join('\n') });
    lines = [];
  };
  let names: string[] = [];
  for (const line of source.split('\n')) {
    if (lines.length === 0 && line.trim() === '') continue;
    lines.push(line);
    const fn = /^local function (\w+)/.exec(line);
    const value = /^local ([\w, ]+) =/.exec(line);
    if (fn) {
      names = [fn[1]!];
      inFunction = true;
    } else if (inFunction && line === 'end') {
      inFunction = false;
      close(names);
    } else if (!inFunction && value) {
      close(value[1]!.split(',').map((s) => s.trim()));
    }
  }
  return out;
}

let library: Chunk[] | undefined;
function libraryChunks(): Chunk[] {
  library ??= LIBRARY_ORDER.flatMap((f) => {
    const src = LIBRARY_SOURCES[f];
    if (src === undefined) throw new Error(`lib/scripts/lib/${f}.lua is missing`);
    // The file's opening comment describes the file, not its first definition.
    return chunks(src.replace(/^(--.*\n)+\n/, ''));
  });
  return library;
}

/**
 * The library definitions `body` reaches, in library order (`skip`: names not followed, those of
 * a script's cold definitions).
 */
export function reached(body: string, skip: ReadonlySet<string> = new Set()): Chunk[] {
  const all = libraryChunks();
  const used = new Set<Chunk>();
  const tokens = new Set(
    code(body)
      .match(IDENT)
      ?.filter((t) => !skip.has(t)),
  );
  let grew = true;
  while (grew) {
    grew = false;
    for (const c of all) {
      if (!used.has(c) && c.names.some((n) => tokens.has(n))) {
        used.add(c);
        for (const t of code(c.text).match(IDENT) ?? []) tokens.add(t);
        grew = true;
      }
    }
  }
  return all.filter((c) => used.has(c));
}

/** Library definitions no script reaches (kept empty by test/unit/lua.test.ts). */
export function unusedLibraryDefinitions(): string[] {
  const used = new Set(Object.values(SCRIPT_SOURCES).flatMap((src) => reached(src)));
  return libraryChunks()
    .filter((c) => !used.has(c))
    .flatMap((c) => c.names);
}

/**
 * A script's cold definitions (`--! cold: <names>`: the library functions its body calls only on
 * rare paths, and what only they reach): their locals are declared before the body, and made
 * where the body's one `load_cold()` statement stands (replaced by them: it must be in the main
 * chunk, run at most once, before any use). A script call makes a closure per definition it
 * runs, ~1,000 Redis instructions each; inline, not in a loader function (whose closure would
 * capture every upvalue of theirs: as costly as the closures it saves). `keys`: the keys only
 * cold definitions use (their locals), `keyLines` the lines that name them (made there too).
 * Returns the declaration and the definitions.
 */
export function coldParts(
  cold: readonly Chunk[],
  keys: readonly string[],
  keyLines: readonly string[],
): { declare: string; define: string } {
  const names = [...keys, ...cold.flatMap((c) => c.names)];
  // A definition becomes an assignment to its local.
  const bodies = cold.map((c) =>
    c.text
      .replace(/^local function (\w+)\(/m, '$1 = function(')
      .replace(/^local ([\w, ]+) =/m, '$1 ='),
  );
  return {
    declare: `local ${names.join(', ')}`,
    define: ['-- (load_cold: the cold definitions)', ...keyLines, ...bodies].join('\n'),
  };
}
