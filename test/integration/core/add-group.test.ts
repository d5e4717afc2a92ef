// Group commit of single adds: concurrent add() calls share one add script, each caller gets
// its own result or its own error.
import { afterAll, describe, expect, it } from '@jest/globals';
import { errorOf } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Count the add scripts a client sends (scripts go through sendCommand as evalsha / eval). */
function countScripts(client: ReturnType<QueueFixture['client']>): { readonly count: number } {
  let count = 0;
  const original = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; args?: unknown[] }, ...rest: unknown[]) => {
    if (/^eval/i.test(command.name)) count++;
    return (original as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  return {
    get count() {
      return count;
    },
  };
}

describe('add: concurrent single adds group-commit', () => {
  it('64 adds of one tick go in two scripts (one per place in flight), each with its own result', async () => {
    const client = fx.client();
    const q = fx.queue<number>({}, client);
    // Start-up checks and script loading out of the way: add_plain.lua, and add.lua (a caller
    // id), which a Redis that never ran it would refuse once (NOSCRIPT, then EVAL: 4 scripts).
    await q.add(-1);
    await q.add(-2, { id: 'warm' });
    const scripts = countScripts(client);
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => q.add(i, i % 2 ? { id: `c${i}` } : {})),
    );
    expect(scripts.count).toBe(2);
    results.forEach((r, i) => {
      expect(r.added).toBe(true);
      if (i % 2) expect(r.id).toBe(`c${i}`);
    });
    const ids = new Set(results.map((r) => r.id));
    expect(ids.size).toBe(64);
    const leased = await q.lease({ count: 100, leaseMs: 5_000 });
    const byId = new Map(leased.map((l) => [l.id, l.data]));
    results.forEach((r, i) => expect(byId.get(r.id)).toBe(i));
    expect(byId.size).toBe(66); // with the two warm-up jobs
  });

  it('a duplicate caller id in the same group resolves { added: false } for the later caller only', async () => {
    const q = fx.queue<string>();
    await q.add('warm-up');
    const [a, b, c] = await Promise.all([
      q.add('x'),
      q.add('a', { id: 'same' }),
      q.add('b', { id: 'same' }),
    ]);
    expect(a!.added).toBe(true);
    expect(b).toEqual({ id: 'same', added: true });
    expect(c).toEqual({ id: 'same', added: false });
    expect((await q.getJob('same'))!.data).toBe('a');
  });

  it("one caller's bad input is its own error: the others' jobs are added", async () => {
    const q = fx.queue<number>();
    await q.add(0);
    const settled = await Promise.allSettled([
      q.add(1),
      q.add(2, { priority: 42 }),
      q.add(3, { id: 'ok' }),
      q.add(4, { id: 'z', dedupe: { ttlMs: -1 } }),
    ]);
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
    ]);
    expect(settled[1]).toMatchObject({ reason: { code: 'INVALID_ARGUMENT' } });
    expect(settled[3]).toMatchObject({ reason: { code: 'INVALID_ARGUMENT' } });
    expect(await q.counts()).toMatchObject({ pending: 3 });
  });

  it("a script's error is the error of every add that rode in it; the next group works again", async () => {
    const client = fx.client();
    const q = fx.queue<number>({}, client);
    await q.add(0);
    const key = `${q.options.prefix}:{${q.name}}:p5`;
    await client.del(key);
    await client.set(key, 'not a list');
    const first = q.add(1, { priority: 3 });
    await Promise.resolve(); // the end of the tick: `first` is sent alone, its own script
    const group = [q.add(2), q.add(3, { priority: 3 }), q.add(4, { id: 'g' })];
    await first;
    const errors = await Promise.all(group.map((p) => errorOf(p)));
    expect(errors[0]).toBeInstanceOf(Error);
    expect(errors[1]).toBe(errors[0]);
    expect(errors[2]).toBe(errors[0]);
    await client.del(key);
    expect(await q.add(5)).toMatchObject({ added: true });
  });

  it('at most two group scripts are in flight: adds made meanwhile wait and go together in the next', async () => {
    const client = fx.client();
    const q = fx.queue<number>({}, client);
    await q.add(-1);
    const scripts = countScripts(client);
    const two = [q.add(0), q.add(1)]; // one tick, two free places: a script each
    await Promise.resolve();
    expect(scripts.count).toBe(2);
    const later = Array.from({ length: 10 }, (_, i) => q.add(2 + i, i === 3 ? { id: 'x' } : {}));
    await Promise.resolve();
    expect(scripts.count).toBe(2); // both places taken: the ten wait
    const results = await Promise.all([...two, ...later]);
    expect(scripts.count).toBe(3);
    expect(new Set(results.map((r) => r.id)).size).toBe(12);
    expect(results[5]).toEqual({ id: 'x', added: true });
    const leased = await q.lease({ count: 20, leaseMs: 5_000 });
    const byId = new Map(leased.map((l) => [l.id, l.data]));
    results.forEach((r, i) => expect(byId.get(r.id)).toBe(i));
  });
});
