/**
 * The key table (lib/keys.ts): names in words, which keys scripts may name, its rows in
 * docs/internals/redis-layout.md, and no key built elsewhere from its stored part.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { KEY_TABLE } from '../../lib/keys.js';
import { assembleSource } from '../../lib/scripts/assemble.js';
import { tsFiles } from '../support/source-files.js';
import { made } from './lua-support.js';

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

  it('nothing in lib/ or src/ but lib/keys.ts and its accessors (lib/redis/queue-keys.ts) builds a key from its stored part', () => {
    const spelled = [...tsFiles('lib'), ...tsFiles('src')]
      .filter((f) => f !== join('lib', 'keys.ts') && f !== join('lib', 'redis', 'queue-keys.ts'))
      .filter((f) => /\.base \+ '[^*']|base\}[a-z]/.test(readFileSync(f, 'utf8')));
    expect(spelled).toEqual([]);
  });
});
