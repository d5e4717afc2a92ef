// Every script compiles in Redis: Lua's limits (200 active locals and 60 upvalues a function)
// and syntax are checked by Redis' compiler only, when a script is first run — this loads each
// one, so a script past a limit fails here rather than on its first call in production.
import { afterAll, describe, expect, it } from '@jest/globals';
import { SCRIPT_NAMES, script } from '../../../lib/scripts/assemble.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('scripts', () => {
  it('every assembled script compiles in Redis (SCRIPT LOAD)', async () => {
    const c = fx.client();
    const failed: string[] = [];
    for (const name of SCRIPT_NAMES) {
      try {
        await c.script('LOAD', script(name).lua);
      } catch (e) {
        failed.push(`${name}: ${(e as Error).message}`);
      }
    }
    expect(failed).toEqual([]);
  });
});
