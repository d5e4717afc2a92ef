/**
 * A script's arguments (its `--! argv:` header, lib/scripts/header.ts): how a header is read, how
 * the assembler checks it against the code, and the tuple types TypeScript callers get.
 */
import { describe, expect, it } from '@jest/globals';
import { assembleSource, script } from '../../lib/scripts/assemble.js';
import type { ScriptArgs } from '../../lib/scripts/define.js';
import { argvType, parseHeader } from '../../lib/scripts/header.js';
import { SCRIPT_SOURCES } from '../../lib/scripts/sources.generated.js';
import { made } from './lua-support.js';

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
