/** The Node options a sandbox inherits when none are given (lib/sandbox/spawn.ts). */
import { describe, expect, it } from '@jest/globals';
import { inheritedExecArgv } from '../../../lib/sandbox/spawn.js';

describe("a sandbox's inherited Node options", () => {
  it("are Node's own inheritance (undefined) when nothing must be left out", () => {
    expect(inheritedExecArgv(['--import', 'tsx', '--enable-source-maps'])).toBeUndefined();
    expect(inheritedExecArgv([])).toBeUndefined();
  });

  it('leave out what would run other code than the entry, or refuse an entry file', () => {
    expect(
      inheritedExecArgv([
        '--import',
        './loader.mjs',
        '--input-type=module',
        '-e',
        'console.log(1)',
        '--max-old-space-size=100',
        '--print',
        '2',
        '--eval=3',
        '--test',
        '--test-reporter=spec',
        '--watch-path',
        'src',
        '-i',
      ]),
    ).toEqual(['--import', './loader.mjs', '--max-old-space-size=100']);
  });
});
