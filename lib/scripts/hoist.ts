/**
 * The main chunk's locals declared up front, in one statement, ordered by how many closures
 * capture them (assemble.ts runs it on the prelude, the library and the cold declarations).
 *
 * Why: a script call runs its main chunk again, so it makes a closure for every function it
 * defines, and each upvalue a closure captures is looked up in Lua 5.1's list of open upvalues
 * (`luaF_findupval`), which is sorted by stack slot from the top and walked down to the local's
 * slot. A local declared early (`rcall`, the keys) sits low, and capturing it walked past every
 * local captured before: ~440 Redis instructions a capture, ~430 captures a call of
 * complete_and_lease. Declared in one statement with the most captured last (highest slots),
 * those walks are short. The definitions stay where they are, as assignments: what runs, and
 * in what order, is unchanged.
 */
import { code, IDENT } from './library.js';

/** A top-level declaration: `local function name(`, `local a, b = …` or `local a, b`. */
const DECLARATION = /^local (?:function (\w+)\(|([\w, ]+?)\s*(=|$))/gm;

/**
 * `parts` (the prelude, the library definitions, the cold declarations: main-chunk text whose
 * top-level lines start at column 0, their bodies indented) with each top-level `local` made an
 * assignment to a local of `declare`; `users`: the texts whose closures capture them (each
 * library definition, the cold ones, the body). Refuses a name declared twice (hoisted, the two
 * would be one local).
 */
export function hoistLocals(
  parts: readonly string[],
  users: readonly string[],
): { declare: string; parts: string[] } {
  const names: string[] = [];
  const out = parts.map((part) =>
    part.replace(
      DECLARATION,
      (_m, fn: string | undefined, list: string | undefined, eq: string) => {
        if (fn !== undefined) {
          names.push(fn);
          return `${fn} = function(`;
        }
        const declared = list!.split(',').map((n) => n.trim());
        names.push(...declared);
        // `local a, b` alone declares them (nil): nothing is left to run.
        return eq === '=' ? `${declared.join(', ')} =` : '';
      },
    ),
  );
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) throw new Error(`declared twice in the main chunk: ${twice.join(', ')}`);
  const uses = users.map((u) => new Set(code(u).match(IDENT)));
  const captures = new Map(names.map((n) => [n, uses.filter((u) => u.has(n)).length]));
  // (Array#sort is stable: equal counts keep their order.)
  const order = [...names].sort((a, b) => captures.get(a)! - captures.get(b)!);
  return { declare: `local ${order.join(', ')}`, parts: out };
}
