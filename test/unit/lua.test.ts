import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
import type { ScriptArgs } from '../../lib/scripts/define.js';
import { argvType, parseHeader } from '../../lib/scripts/header.js';
import { LIBRARY_SOURCES, SCRIPT_SOURCES } from '../../lib/scripts/sources.generated.js';

/** The locals a script's main chunk declares up front (lib/scripts/hoist.ts), in order. */
const mainLocals = (lua: string) =>
  (/^local (\w+(?:, \w+)*)$/m.exec(lua)?.[1] ?? '').split(', ').filter(Boolean);

/** A made-up script: its header lines, then its body. */
const made = (keys: string, argv: string, body: string) =>
  `-- test script\n--! keys: ${keys}\n--! argv: ${argv}\n${body}\n`;

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

describe('the key table', () => {
  it('names every key in words (no abbreviations such as ev, hb, res, wseq)', () => {
    expect(Object.keys(KEY_TABLE).filter((n) => n.length < 4)).toEqual([]);
    const parts = Object.values(KEY_TABLE).map((k) => k.part);
    expect(new Set(parts).size).toBe(parts.length);
  });

  it('a script may not name a key no script touches', () => {
    expect(() =>
      assembleSource('t', made('cleanGuard', 'x', 'return ARGV[1] .. K_CLEAN_GUARD')),
    ).toThrow(/key cleanGuard is not for scripts/);
    expect(() => assembleSource('t', made('flow', 'x', 'return ARGV[1] .. K_FLOW'))).toThrow(
      /unknown key flow/,
    );
  });

  it('docs/internals/redis-layout.md has a row per key: its name, then its stored part', () => {
    const doc = readFileSync('docs/internals/redis-layout.md', 'utf8');
    const rows = new Map(
      [...doc.matchAll(/^\| `(\w+)` \| `([^`]+)`/gm)].map((m) => [m[1]!, m[2]!]),
    );
    expect([...rows.keys()]).toEqual(Object.keys(KEY_TABLE));
    for (const [name, k] of Object.entries(KEY_TABLE)) {
      expect({ name, part: rows.get(name)!.startsWith(k.part) }).toEqual({ name, part: true });
    }
  });

  it('nothing in lib/ or src/ but lib/keys.ts builds a key from its stored part', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory()
          ? files(join(dir, e.name))
          : e.name.endsWith('.ts')
            ? [join(dir, e.name)]
            : [],
      );
    const spelled = [...files('lib'), ...files('src')]
      .filter((f) => f !== join('lib', 'keys.ts'))
      .filter((f) => /\.base \+ '[^*']|base\}[a-z]/.test(readFileSync(f, 'utf8')));
    expect(spelled).toEqual([]);
  });
});

describe('script arguments (--! argv:)', () => {
  it('a header names the arguments, repeated groups, the rest and alternative lists', () => {
    const h = parseHeader(
      't',
      '--! keys: leased\n--! argv: worker_id mode:retry|dead count [grace_ms]\n',
    );
    expect(h.keys).toEqual(['leased']);
    expect(h.argv).toEqual([
      [
        { name: 'worker_id' },
        { name: 'mode', choices: ['retry', 'dead'] },
        { name: 'count' },
        { name: 'grace_ms', optional: true },
      ],
    ]);
    expect(argvType(h)).toBe("[workerId: Arg, mode: 'retry' | 'dead', count: Arg, graceMs?: Arg]");
    const grouped = parseHeader(
      't',
      '--! argv: worker_id count\n--! argv: leases(seq token)*count rest...\n',
    );
    expect(grouped.argv[0]!.slice(2)).toEqual([
      { name: 'leases', times: 'count', group: ['seq', 'token'] },
      { name: 'rest', times: '...' },
    ]);
    expect(argvType(grouped)).toBe('[workerId: Arg, count: Arg, ...leasesThenRest: Arg[]]');
    const actions = parseHeader('t', '--! argv: action:get id | action:purgeall limit\n');
    expect(argvType(actions)).toBe("[action: 'get', id: Arg] | [action: 'purgeall', limit: Arg]");
  });

  it('a malformed header is refused, every problem named', () => {
    expect(() => parseHeader('t', '--! keys: leased\n')).toThrow(/no --! argv: header/);
    expect(() => parseHeader('t', '--! argv: a b*nope\n')).toThrow(
      /its count nope is not an argument named before it/,
    );
    expect(() => parseHeader('t', '--! argv: a rest... b\n')).toThrow(/must come last/);
    expect(() => parseHeader('t', '--! argv: a a [b] c\n')).toThrow(
      /argument a named twice; optional \[b\] must be the last argument/,
    );
    expect(() => parseHeader('t', '--! argv: Bad-Name\n')).toThrow(/cannot read argument/);
  });

  it('the assembler checks the header against the code', () => {
    const ok = made('leased', 'seq ms', "return rcall('ZADD', K_LEASED, ARGV[2], ARGV[1])");
    expect(() => assembleSource('t', ok)).not.toThrow();
    expect(script('release').lua).toContain(
      '--   [1] worker_id, [2] count, then leases(seq token) × count',
    );
    // An argument past the declared ones.
    expect(() =>
      assembleSource(
        't',
        made('leased', 'seq', "return rcall('ZADD', K_LEASED, ARGV[2], ARGV[1])"),
      ),
    ).toThrow(/reads ARGV\[2\] past its declared arguments/);
    // A declared argument never read.
    expect(() =>
      assembleSource(
        't',
        made('leased', 'seq ms token', "return rcall('ZADD', K_LEASED, ARGV[2], ARGV[1])"),
      ),
    ).toThrow(/never reads ARGV\[3\] \(token\)/);
    // Computed indexes need repeated arguments.
    expect(() =>
      assembleSource(
        't',
        made('leased', 'count', "return rcall('ZADD', K_LEASED, ARGV[1], ARGV[1 + 1])"),
      ),
    ).toThrow(/computed indexes but declares no repeated arguments/);
    expect(() =>
      assembleSource(
        't',
        made(
          'leased',
          'count ids*count',
          "return rcall('ZREM', K_LEASED, unpack(ARGV, 2, 1 + ARGV[1]))",
        ),
      ),
    ).not.toThrow();
    // A library function's ARGV counts too: add_record reads the add scripts' first six.
    expect(() =>
      assembleSource('t', made('addCallRecords', 'call', "add_record(ARGV[1], 0, '')")),
    ).toThrow(/reads ARGV\[6\] past/);
  });

  it('the add scripts start with the arguments add_record reads (lib/scripts/lib/adding.lua)', () => {
    const head = (n: 'add' | 'add_plain') =>
      parseHeader(n, SCRIPT_SOURCES[n])
        .argv[0]!.slice(0, 7)
        .map((p) => p.name);
    expect(head('add')).toEqual(head('add_plain'));
    expect(head('add').slice(4)).toEqual(['record_ttl_ms', 'ack_count', 'acked_calls']);
  });

  it('TypeScript callers get each script’s arguments as a named tuple', () => {
    const release: ScriptArgs['release'] = ['7', 2, '10', '3', '11', '4'];
    const rate: ScriptArgs['flow_control'] = ['rate', 10, 1000];
    // @ts-expect-error fail's mode is 'retry' or 'dead'
    const fail: ScriptArgs['fail'] = ['1', '2', '3', 'boom', 'later', 0, 3, 100, ''];
    // @ts-expect-error progress takes seq, token, worker id and value: four arguments
    const progress: ScriptArgs['progress'] = ['1', '2', '3'];
    // @ts-expect-error 'rate' takes a max and a duration
    const noDuration: ScriptArgs['flow_control'] = ['rate', 10];
    expect([release.length, rate.length, fail.length, progress.length, noDuration.length]).toEqual([
      6, 3, 9, 3, 2,
    ]);
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
