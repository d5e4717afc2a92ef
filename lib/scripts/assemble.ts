/**
 * Builds each script's Lua from its file (lib/scripts/<name>.lua): a prelude binding the keys its
 * header declares (`--! keys:`) and the error codes it uses (`E_<code>`, from SCRIPT_CODES in
 * lib/errors.ts), the library functions it reaches (lib/scripts/lib/*.lua, only those), then its
 * body. Checks the header against the code: the keys it declares are exactly the keys its code
 * uses, and its code reads only the arguments its `--! argv:` header declares (header.ts).
 */
import { KEY_TABLE, type KeyName } from '../keys.js';
import type { KeyOwner, QueueKeys } from '../redis/queue-keys.js';
import { fixedPart, parseHeader, type ScriptHeader } from './header.js';
import { hoistLocals } from './hoist.js';
import { code, coldParts, reached } from './library.js';
import { ASSEMBLED_LUA } from './assembled.generated.js';
import {
  BY_NAME,
  ERROR_CODES,
  luaName,
  owned,
  PER_QUEUE,
  prelude,
  type KeySlot,
} from './prelude.js';
import { SCRIPT_SOURCES } from './sources.generated.js';

export type { KeySlot };
export type ScriptName = keyof typeof SCRIPT_SOURCES;
export const SCRIPT_NAMES = Object.keys(SCRIPT_SOURCES) as ScriptName[];

/** What a script's header says of its keys (no assembly: scriptShape). */
export interface ScriptShape {
  readonly name: string;
  readonly keys: readonly KeySlot[];
  /**
   * `--! keys: per-queue …`: the keys are those of one queue, passed once per queue the call
   * names (a flow on one Redis writes several queues in one script); `use_queue(q)` binds
   * queue q's (1-based; the first is bound at start). Called with numkeys first.
   */
  readonly perQueue: boolean;
  /**
   * `--! keys: by-name …`: the keys are not passed one by one: KEYS[1] is the queue's base
   * (`<prefix>:{<queue>}:`) and the prelude names each key from it (its stored part from
   * lib/keys.ts); only the keys of one worker or producer session follow, passed (`passed`). A
   * call sends two keys instead of fifteen (each passed key costs Redis ~1,000 instructions per
   * call, more than naming it in Lua); Cluster routes it by the base's hash tag, the queue's slot.
   */
  readonly byName: boolean;
  /** The KEYS a call passes: `keys`, or for a by-name script the owners' keys after the base. */
  readonly passed: readonly KeySlot[];
}

export interface AssembledScript extends ScriptShape {
  readonly lua: string;
}

/** The keys of a script's header, checked against the table. */
function declaredKeys(name: string, header: ScriptHeader): KeySlot[] {
  const keys = header.keys.filter((k) => k !== PER_QUEUE && k !== BY_NAME) as KeySlot[];
  for (const word of [PER_QUEUE, BY_NAME]) {
    if (header.keys.indexOf(word) > 0) throw new Error(`${name}.lua: ${word} comes first`);
    if (header.keys[0] === word && keys.includes('pending*')) {
      throw new Error(`${name}.lua: pending* cannot be ${word} (name the lists: pending)`);
    }
  }
  for (const k of keys) {
    if (k === 'pending*') continue;
    if (!(k in KEY_TABLE)) throw new Error(`${name}.lua: unknown key ${k}`);
    if ('scripts' in KEY_TABLE[k]) throw new Error(`${name}.lua: key ${k} is not for scripts`);
  }
  if (keys.includes('pending*') && keys.at(-1) !== 'pending*') {
    throw new Error(`${name}.lua: pending* must be the last key`);
  }
  return keys;
}

/**
 * What is wrong with the arguments `code` (the script and the library it reaches, without
 * comments) reads, against its header: an ARGV[i] past every list's fixed part, a computed
 * index without repeated arguments declared, a fixed argument never read.
 */
function argvProblems(header: ScriptHeader, keys: readonly KeySlot[], code: string): string[] {
  const fixed = Math.max(0, ...header.argv.map((l) => fixedPart(l).length));
  const repeated = header.argv.some((l) => fixedPart(l).length < l.length);
  const read = new Set([...code.matchAll(/\bARGV\[(\d+)\]/g)].map((m) => Number(m[1])));
  const problems = [...read]
    .filter((i) => i > fixed)
    .map((i) => `reads ARGV[${i}] past its declared arguments`);
  const computed = /\bARGV\b(?!\[\d+\])/.test(code);
  if (computed && !repeated)
    problems.push('reads ARGV at computed indexes but declares no repeated arguments');
  if (keys.includes('pending*')) {
    // The prelude reads the first argument: the priorities whose pending lists are passed.
    read.add(1);
    if (header.argv.some((l) => l[0]?.name !== 'priorities')) {
      problems.push('a pending* script takes `priorities` first');
    }
  }
  for (let i = 1; i <= fixed; i++) {
    if (!read.has(i))
      problems.push(
        `never reads ARGV[${i}] (${header.argv
          .map((l) => l[i - 1]?.name)
          .filter(Boolean)
          .join(' | ')})`,
      );
  }
  return problems;
}

/** Most locals a script's main chunk may declare (Lua's limit is 200 active locals a function). */
const MAIN_LOCALS_MAX = 185;

/** Assemble script `name` from its source `body` (exported for the tests' made-up scripts). */
export function assembleSource(name: string, body: string): AssembledScript {
  const header = parseHeader(name, body);
  const { keys, perQueue, byName, passed } = shapeOf(name, header);
  const lib = reached(body);
  // `--! cold:` names: made by load_cold() when the body needs them (library.ts, coldLoader).
  const coldNames = new Set(
    [...body.matchAll(/^--! cold:(.*)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/)),
  );
  const hot = coldNames.size ? reached(body, coldNames) : lib;
  const cold = lib.filter((c) => !hot.includes(c));
  const all = code([...lib.map((c) => c.text), body].join('\n'));
  const hotCode = code([...hot.map((c) => c.text), body].join('\n'));
  // The keys a by-name script names in its prelude that only its cold definitions use.
  const named = new Map(
    byName
      ? keys
          .filter((k) => !k.startsWith('pending') && !owned(k))
          .map((k) => [luaName(k as KeyName), k as KeyName])
      : [],
  );
  const coldKeys = new Set(
    (code(cold.map((c) => c.text).join('\n')).match(/\bK_[A-Z_]+\b/g) ?? []).filter(
      (k) => named.has(k) && !new RegExp(`\\b${k}\\b`).test(hotCode),
    ),
  );
  const used = new Set(all.match(/\bK_[A-Z_]+\b/g));
  const declared = new Set(
    keys.filter((k) => !k.startsWith('pending')).map((k) => luaName(k as KeyName)),
  );
  const codes = [...new Set(all.match(/\bE_[A-Z_]+\b/g))].sort();
  const problems = [
    ...[...used].filter((k) => !declared.has(k)).map((k) => `uses ${k} without declaring it`),
    ...[...declared].filter((k) => !used.has(k)).map((k) => `declares ${k} but never uses it`),
    ...codes
      .filter((c) => !ERROR_CODES.has(c))
      .map((c) => `uses ${c}, not a code of SCRIPT_CODES (lib/errors.ts)`),
    ...argvProblems(header, keys, all),
  ];
  const pending = keys.some((k) => k.startsWith('pending'));
  if (/\bpending_key\b/.test(all) !== pending) problems.push('pending keys: declared iff used');
  if (/\buse_queue\b/.test(all) !== perQueue) problems.push(`${PER_QUEUE}: declared iff used`);
  for (const n of coldNames) {
    if (!cold.some((c) => c.names.includes(n))) problems.push(`cold ${n}: not a cold definition`);
  }
  const loads = code(body).match(/^[ \t]*load_cold\(\)[ \t]*$/gm)?.length ?? 0;
  if (loads !== (cold.length > 0 ? 1 : 0) || /\bload_cold\b/.test(code(body)) !== loads > 0)
    problems.push('cold: declared iff used, in one load_cold() statement');
  if (problems.length) throw new Error(`${name}.lua: ${problems.join('; ')}`);
  const keyLines = [...coldKeys].map(
    (k) => `${k} = QUEUE_BASE .. '${KEY_TABLE[named.get(k)!].part}'`,
  );
  const parts = cold.length ? coldParts(cold, [...coldKeys], keyLines) : undefined;
  const [doc, bind] = splitDoc(
    prelude(name, header, keys, codes, perQueue, byName, coldKeys, /\bLEASE_PAD\b/.test(all)),
  );
  // The main chunk's locals declared up front, the most captured last (hoist.ts).
  const main = hoistLocals(
    [bind, ...hot.map((c) => c.text), ...(parts ? [parts.declare] : [])],
    [...lib.map((c) => c.text), body],
  );
  const lua = [
    doc,
    main.declare,
    ...main.parts.filter((t) => t !== ''),
    `-- ${name}.lua`,
    parts ? body.replace(/^[ \t]*load_cold\(\)[ \t]*$/m, () => parts.define) : body,
  ].join('\n\n');
  // Lua allows 200 active locals in a function: the main chunk's (prelude, library, body) must
  // leave room for the body's own blocks. A script near it runs its body as a function
  // (complete_and_lease.lua).
  const mainLocals = lua.match(/^local\s+(?:function\s+\w+|[\w, ]+)/gm) ?? [];
  const locals = mainLocals.reduce(
    (n, l) => n + (/^local\s+function/.test(l) ? 1 : l.slice(6).split(',').length),
    0,
  );
  if (locals > MAIN_LOCALS_MAX)
    throw new Error(
      `${name}.lua: its main chunk declares ${locals} locals (at most ${MAIN_LOCALS_MAX}: Lua allows 200 active); run its body as a function`,
    );
  return { name, keys, perQueue, byName, passed, lua };
}

/** A prelude's leading comment lines, and the rest. */
function splitDoc(text: string): [string, string] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => !l.startsWith('--'));
  return [lines.slice(0, at).join('\n'), lines.slice(at).join('\n')];
}

function shapeOf(name: string, header: ScriptHeader): ScriptShape {
  const keys = declaredKeys(name, header);
  const byName = header.keys[0] === BY_NAME;
  const passed = byName ? keys.filter(owned) : keys;
  return { name, keys, perQueue: header.keys[0] === PER_QUEUE, byName, passed };
}

const assembled = new Map<ScriptName, AssembledScript>();
const shapes = new Map<ScriptName, ScriptShape>();

/**
 * A script's keys, from its header alone: what a call needs when Redis has the script already
 * (its SHA1 is generated, assembled.generated.ts), without assembling it.
 */
export function scriptShape(name: ScriptName): ScriptShape {
  let s = shapes.get(name);
  if (!s) {
    s = shapeOf(name, parseHeader(name, SCRIPT_SOURCES[name]));
    shapes.set(name, s);
  }
  return s;
}

/** A script, assembled once per process (or as generated: ASSEMBLED_LUA). */
export function script(name: ScriptName): AssembledScript {
  let s = assembled.get(name);
  if (!s) {
    const lua = ASSEMBLED_LUA[name];
    s =
      lua === undefined
        ? assembleSource(name, SCRIPT_SOURCES[name])
        : { ...scriptShape(name), lua };
    assembled.set(name, s);
  }
  return s;
}

/**
 * The KEYS of a per-queue script (`perQueue`) for the queues `queues`, in order: numkeys, then
 * each queue's keys; then the event log's cap when it logs events (its first ARGV).
 */
export function perQueueKeys(
  s: ScriptShape,
  queues: readonly QueueKeys[],
  eventCap: number,
): Array<string | number> {
  const keys = queues.flatMap((q) => scriptKeys(s, q));
  return s.keys.includes('eventLog') ? [keys.length, ...keys, eventCap] : [keys.length, ...keys];
}

/** The KEYS of a script for one queue (and worker or producer session, where it has such keys). */
export function scriptKeys(s: ScriptShape, keys: QueueKeys, owner: KeyOwner = {}): string[] {
  const out: string[] = s.byName ? [keys.base] : [];
  for (const k of s.passed) {
    if (k === 'pending') for (let p = 0; p <= 9; p++) out.push(keys.pending(p));
    else if (k !== 'pending*') out.push(keys.key(k, owner));
  }
  return out;
}
