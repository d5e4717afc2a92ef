/**
 * Moving a slot of a private Redis Cluster (redis-cluster.ts) to another master by hand, while
 * clients use it.
 */
import { delay } from '../../tools/redis-server.js';
import type { RedisClusterHandle } from './redis-cluster.js';

/**
 * Move one slot to another master by hand, the way `redis-cli --cluster reshard` does it:
 * SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in batches, then
 * SETSLOT NODE on the target, the source and every other master. `holdMs` keeps the slot in
 * the migrating state that long before moving keys (clients meanwhile get ASK/TRYAGAIN).
 */
export async function migrateSlot(
  cluster: RedisClusterHandle,
  slot: number,
  targetPort: number,
  opts: { holdMs?: number; batch?: number } = {},
): Promise<{ keysMoved: number; ms: number }> {
  const t0 = Date.now();
  const topo = await cluster.topology();
  const { master: source } = await cluster.ownerOf(slot);
  const target = topo.find((n) => n.port === targetPort && n.role === 'master');
  if (!target) throw new Error(`${targetPort} is not a master`);
  if (target.id === source.id) throw new Error(`slot ${slot} is already on ${targetPort}`);
  await cluster.command(target.port, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id);
  await cluster.command(source.port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id);
  if (opts.holdMs) await delay(opts.holdMs);
  let keysMoved = 0;
  for (;;) {
    const keys = (await cluster.command(
      source.port,
      'CLUSTER',
      'GETKEYSINSLOT',
      slot,
      opts.batch ?? 100,
    )) as string[];
    if (keys.length === 0) break;
    await cluster.command(
      source.port,
      'MIGRATE',
      target.host,
      target.port,
      '',
      0,
      5000,
      'KEYS',
      ...keys,
    );
    keysMoved += keys.length;
  }
  await cluster.command(target.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  await cluster.command(source.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  for (const m of topo.filter(
    (n) => n.role === 'master' && n.id !== source.id && n.id !== target.id,
  )) {
    await cluster.command(m.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  }
  return { keysMoved, ms: Date.now() - t0 };
}
