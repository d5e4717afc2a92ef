/**
 * A script's prelude (assemble.ts): its doc comment (its KEYS and ARGV), then the lines that
 * bind its keys (passed, or named from the queue's base), the error codes it uses and the
 * constants its code reads.
 */
import { SCRIPT_CODES } from '../errors.js';
import { DATA_SPAN, KEY_TABLE, LEASE_PAD, type KeyName, type ScriptKeyName } from '../keys.js';
import { argvDoc, type ScriptHeader } from './header.js';

/**
 * One KEYS entry of a script: a key of the table; `pending` stands for the ten pending lists
 * p0..p9; `pending*` (last only) for the pending lists of the priorities named in ARGV[1]
 * (`priorities`).
 */
export type KeySlot = ScriptKeyName | 'pending*';

export const luaName = (k: KeyName) => 'K_' + k.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();
/** The script failure codes, as Lua sees them: E_LEASE_LOST, … */
export const ERROR_CODES = new Map(
  Object.entries(SCRIPT_CODES).map(([c, v]) => ['E_' + c, v.reply]),
);

/** The word that opens the keys of a script called with the keys of several queues. */
export const PER_QUEUE = 'per-queue';
/** The word that opens the keys of a script that names its keys from the queue's base. */
export const BY_NAME = 'by-name';
/** Keys that exist once per worker or producer session (passed even to a by-name script). */
export const owned = (k: KeySlot): boolean => k !== 'pending*' && 'per' in KEY_TABLE[k];

export function prelude(
  name: string,
  header: ScriptHeader,
  keys: readonly KeySlot[],
  codes: readonly string[],
  perQueue: boolean,
  byName: boolean,
  coldKeys: ReadonlySet<string>,
  pad: boolean,
): string {
  const doc: string[] = [`-- ${name}.lua, assembled by lib/scripts/assemble.ts. KEYS:`];
  const bind: string[] = ['local rcall = redis.call'];
  const lists = argvDoc(header);
  const argv = [`-- ARGV${lists.length > 1 ? ', one of' : ''}:`, ...lists.map((l) => `--   ${l}`)];
  if (keys.includes('eventLog')) {
    // The event log's cap comes first in ARGV (ScriptKeys appends it to the keys); taken off
    // here so that the script's own ARGV start at 1.
    argv.unshift(
      '-- ARGV[1] (taken off): the event log cap, 0 = events off (lib/scripts/lib/events.lua)',
    );
    // (EV_CAP_ARG: the cap as sent, for a command that takes it: no number to format; EV_ON
    // whether events are on, without tonumber: a strtod, ~1k Redis instructions a call.)
    bind.push('local EV_CAP_ARG = table.remove(ARGV, 1)', "local EV_ON = EV_CAP_ARG ~= '0'");
  }
  if (keys.includes('data') || keys.includes('addedTimes'))
    bind.push(`local DATA_SPAN = ${DATA_SPAN}`);
  if (pad) bind.push(`local LEASE_PAD = '${LEASE_PAD}'`);
  for (const c of codes) bind.push(`local ${c} = ${ERROR_CODES.get(c)}`);
  let i = 1;
  // Per-queue scripts: (re)bind queue q's keys with use_queue(q).
  const rebind: string[] = [];
  if (perQueue)
    doc.push('--   (once per queue the call names, in order; use_queue(q) binds queue q)');
  if (byName) {
    doc.push(
      `--   [1] the queue's base (<prefix>:{<queue>}:): the keys not passed are named from it`,
    );
    bind.push('local QUEUE_BASE = KEYS[1]');
    i = 2;
  }
  for (const k of keys) {
    if (byName && k === 'pending') {
      doc.push(`--   (named) ${KEY_TABLE.pending.doc}`);
      // (p: a digit, a string or a number.)
      bind.push(
        `local function pending_key(p)\n  return QUEUE_BASE .. '${KEY_TABLE.pending.part}' .. p\nend`,
      );
    } else if (byName && !owned(k)) {
      const key = k as KeyName;
      doc.push(`--   (named) ${luaName(key)}: ${KEY_TABLE[key].doc}`);
      // (A key only cold definitions use is named by load_cold.)
      if (!coldKeys.has(luaName(key)))
        bind.push(`local ${luaName(key)} = QUEUE_BASE .. '${KEY_TABLE[key].part}'`);
    } else if (k === 'pending' && perQueue) {
      doc.push(`--   [${i}..${i + 9}] ${KEY_TABLE.pending.doc}`);
      bind.push(`local PENDING_AT = ${i}`);
      bind.push(`local function pending_key(p)\n  return KEYS[p + PENDING_AT]\nend`);
      rebind.push(`  PENDING_AT = o + ${i}`);
      i += 10;
    } else if (k === 'pending') {
      doc.push(`--   [${i}..${i + 9}] ${KEY_TABLE.pending.doc}`);
      bind.push(`local function pending_key(p)\n  return KEYS[p + ${i}]\nend`);
      i += 10;
    } else if (k === 'pending*') {
      doc.push(`--   [${i}..] the pending lists of the priorities named in ARGV[1], in that order`);
      bind.push(
        `local PENDING_SLOT = {}\nfor i = 1, #ARGV[1] do\n  PENDING_SLOT[tonumber(string.sub(ARGV[1], i, i))] = ${i - 1} + i\nend`,
        `local function pending_key(p)\n  return KEYS[PENDING_SLOT[p]]\nend`,
      );
    } else {
      doc.push(`--   [${i}] ${luaName(k)}: ${KEY_TABLE[k].doc}`);
      bind.push(`local ${luaName(k)} = KEYS[${i}]`);
      rebind.push(`  ${luaName(k)} = KEYS[o + ${i}]`);
      i += 1;
    }
  }
  if (perQueue) {
    bind.push(
      `local function use_queue(q)\n  local o = (q - 1) * ${i - 1}\n${rebind.join('\n')}\nend`,
    );
  }
  return [...doc, ...argv, ...bind].join('\n');
}
