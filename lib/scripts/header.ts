/**
 * The header of a script (lib/scripts/<name>.lua): the keys it touches (`--! keys:`, names of
 * lib/keys.ts) and its arguments (`--! argv:`). Read by the assembler, which checks both against
 * the script's code (assemble.ts), and by scripts/embed-lua.mjs, which writes each script's
 * arguments as a TypeScript tuple (`ScriptArgs` in sources.generated.ts). No imports: the
 * generator loads this file on its own.
 *
 * `--! argv:` names the arguments in order (snake_case words; several lines continue each other):
 * - `name`: one argument; `name:a|b|c`: one argument that is one of these words;
 * - `[name]`: an optional last argument;
 * - `name*count`: `count` arguments, `count` being an argument named before;
 *   `group(a b c)*count`: `count` groups of three;
 * - `name...`, `group(a b)...`: the rest of the arguments;
 * - `|` (a word of its own) starts another list: the script takes one of them (e.g. per action).
 * The arguments before the first repeated one are the list's fixed part: the script reads them
 * as ARGV[1], ARGV[2], …; it reads the others only at computed indexes.
 */

/** One argument of a script call (ioredis sends numbers and Buffers as they are). */
export type Arg = string | number | Buffer;

export interface ArgvPart {
  /** snake_case, as the Lua code and the prelude's comment call it. */
  readonly name: string;
  /** The words it may be (`name:a|b`). */
  readonly choices?: readonly string[];
  readonly optional?: boolean;
  /** Repeated: the name of its count argument, or '...' for the rest of the arguments. */
  readonly times?: string;
  /** The members of a repeated group (`group(a b)*count`). */
  readonly group?: readonly string[];
}

/** One list of arguments (a script with actions may take one of several). */
export type ArgvList = readonly ArgvPart[];

export interface ScriptHeader {
  /** The key names of `--! keys:`, in order (as written: the assembler checks them). */
  readonly keys: readonly string[];
  /** The lists of `--! argv:` (most scripts: one). */
  readonly argv: readonly ArgvList[];
}

const NAME = '[a-z][a-z0-9_]*';
const PLAIN = new RegExp(`^${NAME}$`);
const CHOICE = new RegExp(`^(${NAME}):([a-z0-9_-]+(?:\\|[a-z0-9_-]+)*)$`);
const OPTIONAL = new RegExp(`^\\[(${NAME})\\]$`);
const REPEATED = new RegExp(
  `^(${NAME})(?:\\(((?:${NAME} )*${NAME})\\))?(?:\\*(${NAME})|\\.\\.\\.)$`,
);

const lines = (source: string, tag: string) =>
  [...source.matchAll(new RegExp(`^--! ${tag}:(.*)$`, 'gm'))].map((m) => m[1]!);

/** The arguments before the first repeated one: ARGV[1..fixed(list).length]. */
export const fixedPart = (list: ArgvList): ArgvList => {
  const i = list.findIndex((p) => p.times !== undefined);
  return i < 0 ? list : list.slice(0, i);
};

/** Parse one list of argument words; problems go to `problems`. */
function parseList(words: readonly string[], problems: string[]): ArgvPart[] {
  const list: ArgvPart[] = [];
  const seen = new Set<string>();
  words.forEach((w, i) => {
    let part: ArgvPart | undefined;
    let m: RegExpExecArray | null;
    if (PLAIN.test(w)) part = { name: w };
    else if ((m = CHOICE.exec(w))) part = { name: m[1]!, choices: m[2]!.split('|') };
    else if ((m = OPTIONAL.exec(w))) {
      part = { name: m[1]!, optional: true };
      if (i !== words.length - 1) problems.push(`optional ${w} must be the last argument`);
    } else if ((m = REPEATED.exec(w))) {
      part = { name: m[1]!, times: m[3] ?? '...', ...(m[2] ? { group: m[2].split(' ') } : {}) };
      const count = m[3];
      if (count !== undefined && !fixedPart(list).some((p) => p.name === count)) {
        problems.push(`${w}: its count ${count} is not an argument named before it`);
      }
      if (count === undefined && i !== words.length - 1) {
        problems.push(`${w}: the rest of the arguments must come last`);
      }
    } else {
      problems.push(`cannot read argument ${JSON.stringify(w)}`);
    }
    if (!part) return;
    if (seen.has(part.name)) problems.push(`argument ${part.name} named twice`);
    seen.add(part.name);
    list.push(part);
  });
  return list;
}

/** Parse a script's header. Throws one error listing every problem. */
export function parseHeader(name: string, source: string): ScriptHeader {
  const keys = lines(source, 'keys').flatMap((l) => l.trim().split(/\s+/).filter(Boolean));
  const argvLines = lines(source, 'argv');
  const problems: string[] = [];
  if (argvLines.length === 0) problems.push('no --! argv: header (an empty one: no arguments)');
  // Words: a group's parentheses keep their spaces.
  const words = argvLines.flatMap((l) => l.match(/[^\s(]*\([^)]*\)\S*|\S+/g) ?? []);
  const lists: string[][] = [[]];
  for (const w of words) {
    if (w === '|') lists.push([]);
    else lists.at(-1)!.push(w);
  }
  const argv = argvLines.length === 0 ? [] : lists.map((l) => parseList(l, problems));
  if (problems.length) throw new Error(`${name}.lua: ${problems.join('; ')}`);
  return { keys, argv };
}

const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * The TypeScript type of a script's arguments: a named tuple per list (a union for several),
 * each fixed argument by name, the repeated ones as one rest element named after them.
 */
export function argvType(header: ScriptHeader): string {
  const tuples = header.argv.map((list) => {
    const fixed = fixedPart(list);
    const items = fixed.map((p) => {
      const type = p.choices ? p.choices.map((c) => `'${c}'`).join(' | ') : 'Arg';
      return `${camel(p.name)}${p.optional ? '?' : ''}: ${type}`;
    });
    const rest = list.slice(fixed.length);
    if (rest.length) items.push(`...${camel(rest.map((p) => p.name).join('_then_'))}: Arg[]`);
    return `[${items.join(', ')}]`;
  });
  return tuples.join(' | ');
}

/** The header's arguments in words, for the comment that opens an assembled script. */
export function argvDoc(header: ScriptHeader): string[] {
  return header.argv.map((list) => {
    const fixed = fixedPart(list);
    const words = fixed.map(
      (p, i) =>
        `[${i + 1}] ${p.name}${p.choices ? ` (${p.choices.join(' | ')})` : ''}${p.optional ? ' (optional)' : ''}`,
    );
    for (const p of list.slice(fixed.length)) {
      const what = p.group ? `${p.name}(${p.group.join(' ')})` : p.name;
      words.push(p.times === '...' ? `then ${what}... (the rest)` : `then ${what} × ${p.times}`);
    }
    return words.length ? words.join(', ') : '(none)';
  });
}
