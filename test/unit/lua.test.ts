/**
 * The Lua scripts as assembled (lib/scripts/): embedded sources, SHA1s, keys, cold and hoisted
 * definitions, library functions, error codes. (The key table: lua-keys.test.ts; the
 * arguments a header declares: lua-argv.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { SCRIPT_CODES } from '../../lib/errors.js';
import { KEY_TABLE } from '../../lib/keys.js';
import { queueKeys } from '../../lib/redis/queue-keys.js';
import {
  assembleSource,
  SCRIPT_NAMES,
  script,
  scriptKeys,
  scriptShape,
} from '../../lib/scripts/assemble.js';
import { ASSEMBLED_LUA, SCRIPT_SHAS } from '../../lib/scripts/assembled.generated.js';
import { hoistLocals } from '../../lib/scripts/hoist.js';
import { unusedLibraryDefinitions } from '../../lib/scripts/library.js';
import { LIBRARY_SOURCES, SCRIPT_SOURCES } from '../../lib/scripts/sources.generated.js';
import { made } from './lua-support.js';

/** The locals a script's main chunk declares up front (lib/scripts/hoist.ts), in order. */
const mainLocals = (lua: string) =>
  (/^local (\w+(?:, \w+)*)$/m.exec(lua)?.[1] ?? '').split(', ').filter(Boolean);

describe('Lua scripts', () => {
  it('the embedded sources are those of lib/scripts/**/*.lua (npm run lua)', () => {
    expect(() =>
      execFileSync(process.execPath, ['scripts/embed-lua.mjs', '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });

  it('every script assembles: it declares exactly the keys its code uses, and its arguments', () => {
    for (const name of SCRIPT_NAMES)
      expect(() => assembleSource(name, SCRIPT_SOURCES[name])).not.toThrow();
  });

  it('the generated SHA1s and texts are those the assembler makes (npm run lua)', () => {
    const sha1 = (lua: string) => createHash('sha1').update(lua).digest('hex');
    expect(Object.keys(SCRIPT_SHAS).sort()).toEqual([...SCRIPT_NAMES].sort());
    for (const name of SCRIPT_NAMES) {
      const made = assembleSource(name, SCRIPT_SOURCES[name]);
      expect([name, SCRIPT_SHAS[name]]).toEqual([name, sha1(made.lua)]);
      expect(script(name)).toEqual(made);
      // A call needs only the header's shape: the keys of the assembled script.
      expect({ ...scriptShape(name), lua: made.lua }).toEqual(made);
    }
    expect(Object.keys(ASSEMBLED_LUA).length).toBeGreaterThan(0);
  });

  it('each script gets only its keys, named in its prelude', () => {
    expect(script('progress').keys).toEqual([
      'leaseHolders',
      'progress',
      'progressChannel',
      'meta',
      'eventLog',
    ]);
    expect(script('counts').keys).toEqual([
      'pending',
      'delayed',
      'leased',
      'dead',
      'workers',
      'groupedPending',
      'waitingChildren',
      'completedJobs',
      'data',
    ]);
    expect(script('add').keys.at(-1)).toBe('pending*');
    const lease = script('lease');
    expect(lease.lua).toMatch(/^-- lease\.lua, assembled/);
    expect(lease.lua).toMatch(/^K_LEASE_HOLDERS = KEYS\[/m);
    expect(mainLocals(lease.lua)).toContain('K_LEASE_HOLDERS');
    for (const k of lease.keys.filter((k) => k !== 'pending' && k !== 'pending*')) {
      expect(lease.lua).toContain(KEY_TABLE[k as keyof typeof KEY_TABLE].doc);
    }
  });

  it("a by-name script is passed the queue base and its owners' keys, and names the others", () => {
    const s = script('add_plain');
    expect(s.byName).toBe(true);
    expect(s.passed).toEqual(['addCallRecords']);
    expect(s.keys).toContain('seqCounter');
    expect(s.lua).toContain('\nQUEUE_BASE = KEYS[1]');
    expect(s.lua).toContain(`\nK_SEQ_COUNTER = QUEUE_BASE .. '${KEY_TABLE.seqCounter.part}'`);
    expect(s.lua).toContain('\nK_ADD_CALL_RECORDS = KEYS[2]');
    expect(s.lua).toContain(`return QUEUE_BASE .. '${KEY_TABLE.pending.part}' .. p`);
    const keys = queueKeys('wq', 'q');
    expect(scriptKeys(s, keys, { session: 's1' })).toEqual([keys.base, keys.addCallRecords('s1')]);
    expect(() =>
      assembleSource('t', made('by-name leased pending*', 'priorities', 'return 1')),
    ).toThrow(/pending\* cannot be by-name/);
    expect(() => assembleSource('t', made('leased by-name', 'x', 'return 1'))).toThrow(
      /by-name comes first/,
    );
  });

  it('cold definitions (--! cold:) are declared up front and made where load_cold() stands', () => {
    const s = script('add_plain');
    const at = (t: string) => s.lua.indexOf(t);
    // Hot: made at the script's start; cold: declared there, defined in the body's branch.
    expect(at('\ndata_set_one = function(')).toBeLessThan(at('\n-- add_plain.lua\n'));
    expect(mainLocals(s.lua)).toEqual(expect.arrayContaining(['K_TOKEN_COUNTER', 'hand_off']));
    expect(at('K_TOKEN_COUNTER = ')).toBeGreaterThan(at('\n-- add_plain.lua\n'));
    expect(at(`K_TOKEN_COUNTER = QUEUE_BASE .. '${KEY_TABLE.tokenCounter.part}'`)).toBeGreaterThan(
      at('\n-- add_plain.lua\n'),
    );
    // The parked set is looked at before the cold definitions (an add while workers are busy
    // makes none): its key is named at the start.
    expect(at(`K_PARKED = QUEUE_BASE .. '${KEY_TABLE.parked.part}'`)).toBeLessThan(
      at('\n-- add_plain.lua\n'),
    );
    expect(at('hand_off = function(')).toBeGreaterThan(at('\n-- add_plain.lua\n'));
    expect(s.lua).not.toMatch(/^\s*load_cold\(\)/m);
    const cold = (body: string) =>
      assembleSource('t', made('by-name wake', 'x', `--! cold: wake\n${body}`));
    expect(cold('if ARGV[1] then\n  load_cold()\nend\nwake()').lua).toContain('wake = function(');
    expect(() => cold('wake()')).toThrow(/one load_cold\(\) statement/);
    expect(() => cold('load_cold()\nload_cold()\nwake()')).toThrow(/one load_cold\(\)/);
    expect(() => assembleSource('t', made('by-name wake', 'x', '--! cold: nope\nwake()'))).toThrow(
      /cold nope: not a cold definition/,
    );
  });

  it('the main chunk declares its locals up front, the most captured last (hoist.ts)', () => {
    const s = script('complete_and_lease');
    const locals = mainLocals(s.lua);
    // Every definition of the prelude and library is an assignment to one of them.
    expect(s.lua.slice(0, s.lua.indexOf('-- complete_and_lease.lua'))).not.toMatch(/^local /m);
    expect(locals).toEqual(expect.arrayContaining(['rcall', 'K_LEASED', 'lease_into', 'hmget']));
    expect(s.lua).toMatch(/^rcall = redis\.call$/m);
    // rcall is captured by nearly every function, a constant of the group path by few.
    expect(locals.indexOf('rcall')).toBeGreaterThan(locals.indexOf('GROUP_TURNS'));
    expect(new Set(locals).size).toBe(locals.length);
    const { declare, parts } = hoistLocals(
      ['local a = 1\nlocal function f(x)\n  local y = x\n  return a + y\nend', 'local b, c'],
      ['local function f(x)\n  return a\nend', 'local function g()\n  return a + b\nend'],
    );
    expect(declare).toBe('local c, f, b, a');
    expect(parts).toEqual(['a = 1\nf = function(x)\n  local y = x\n  return a + y\nend', '']);
    expect(() => hoistLocals(['local a = 1\nlocal a = 2'], [])).toThrow(/declared twice.*\ba\b/);
  });

  it('library functions are pulled only into the scripts that use them; none is unused', () => {
    expect(unusedLibraryDefinitions()).toEqual([]);
    expect(script('progress').lua).not.toMatch(/^lease_jobs = function/m);
    expect(script('lease').lua).toMatch(/^lease_jobs = function/m);
    // The lease reply is built in one place, for both scripts that lease.
    for (const name of ['lease', 'complete_and_lease'] as const) {
      expect(script(name).lua).toMatch(/^lease_into = function/m);
      expect(SCRIPT_SOURCES[name]).not.toContain('lease_jobs(');
    }
  });
});

describe('script error codes (E_<code>)', () => {
  it('come from SCRIPT_CODES in lib/errors.ts, bound in the prelude of the scripts that use them', () => {
    expect(script('fail').lua).toContain(`\nE_LEASE_LOST = ${SCRIPT_CODES.LEASE_LOST.reply}`);
    expect(mainLocals(script('fail').lua)).toContain('E_LEASE_LOST');
    expect(script('counts').lua).not.toMatch(/\bE_[A-Z]/);
    for (const src of Object.values(LIBRARY_SOURCES)) expect(src).not.toMatch(/^local E_/m);
  });

  it('a script that uses a code not in the table does not assemble', () => {
    expect(() =>
      assembleSource('t', made('leased', 'seq', 'return E_NOPE or ARGV[1] .. K_LEASED')),
    ).toThrow(/uses E_NOPE, not a code of SCRIPT_CODES/);
  });
});
