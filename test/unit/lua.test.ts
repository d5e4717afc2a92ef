import { execFileSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { KEY_TABLE } from '../../lib/keys.js';
import { SCRIPT_NAMES, script, unusedLibraryDefinitions } from '../../lib/scripts/assemble.js';

describe('Lua scripts', () => {
  it('the embedded sources are those of lib/scripts/**/*.lua (npm run lua)', () => {
    expect(() =>
      execFileSync(process.execPath, ['scripts/embed-lua.mjs', '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });

  it('every script assembles: it declares exactly the keys its code uses', () => {
    for (const name of SCRIPT_NAMES) expect(() => script(name)).not.toThrow();
  });

  it('each script gets only its keys, named in its prelude', () => {
    expect(script('progress').keys).toEqual(['tokens', 'prog', 'evProgress', 'meta', 'events']);
    expect(script('counts').keys).toEqual(['pending', 'delayed', 'leased', 'dead', 'workers']);
    expect(script('add').keys.at(-1)).toBe('pending*');
    const lease = script('lease');
    expect(lease.lua).toMatch(/^-- lease\.lua, assembled/);
    for (const k of lease.keys.filter((k) => k !== 'pending' && k !== 'pending*')) {
      expect(lease.lua).toContain(KEY_TABLE[k as keyof typeof KEY_TABLE].doc);
    }
  });

  it('library functions are pulled only into the scripts that use them; none is unused', () => {
    expect(unusedLibraryDefinitions()).toEqual([]);
    expect(script('progress').lua).not.toContain('local function lease_jobs');
    expect(script('lease').lua).toContain('local function lease_jobs');
  });
});
