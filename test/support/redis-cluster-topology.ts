/**
 * What the nodes of a private Redis Cluster (redis-cluster.ts) say of it: `CLUSTER NODES`
 * parsed, and whether the cluster is healthy.
 */
import type { Redis } from 'ioredis';
import { onPort } from './redis-nodes.js';

export interface ClusterNodeAddress {
  host: string;
  port: number;
}

export interface ClusterNodeInfo extends ClusterNodeAddress {
  id: string;
  role: 'master' | 'replica';
  /** For a replica: its master's id. */
  masterId?: string;
  /** Slot ranges served (masters), e.g. [[0, 5460]]. */
  slots: Array<[number, number]>;
}

export const onNode = <X>(port: number, fn: (r: Redis) => Promise<X>, timeoutMs = 3000) =>
  onPort(port, fn, timeoutMs);

/** Parse `CLUSTER NODES`. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  const out: ClusterNodeInfo[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(' ');
    if (f.length < 8) continue;
    const [id, addr, flags, master] = f as [string, string, string, string];
    const m = /^([^:]+):(\d+)/.exec(addr);
    if (!m) continue;
    const flagSet = flags.split(',');
    if (flagSet.includes('noaddr')) continue;
    const slots: Array<[number, number]> = [];
    for (const s of f.slice(8)) {
      if (s.startsWith('[')) continue; // migrating/importing marker
      const [a, b] = s.split('-');
      slots.push([Number(a), Number(b ?? a)]);
    }
    const info: ClusterNodeInfo = {
      id,
      host: m[1]!,
      port: Number(m[2]),
      role: flagSet.includes('master') ? 'master' : 'replica',
      slots,
    };
    if (master !== '-') info.masterId = master;
    if (flagSet.includes('fail') || flagSet.includes('fail?')) continue;
    out.push(info);
  }
  return out;
}

/**
 * Why the cluster is not healthy ('' when it is): every running node (`up`, their ports) says
 * `cluster_state:ok`, all 16384 slots are assigned and served by a running master, and every
 * running replica's link to its master is up. `topology`: as one live node sees it.
 */
export async function unhealthy(
  up: number[],
  topology: () => Promise<ClusterNodeInfo[]>,
): Promise<string> {
  for (const port of up) {
    let info: string;
    try {
      info = await onNode(port, (r) => r.cluster('INFO') as Promise<string>, 1000);
    } catch (e) {
      return `${port}: ${String(e)}`;
    }
    if (!/cluster_state:ok/.test(info)) return `${port}: cluster_state not ok`;
    if (!/cluster_slots_ok:16384/.test(info)) return `${port}: not all slots ok`;
  }
  let topo: ClusterNodeInfo[];
  try {
    topo = await topology();
  } catch (e) {
    return String(e);
  }
  for (const port of up) {
    const t = topo.find((x) => x.port === port);
    if (!t) return `node ${port} not (yet) seen as healthy`;
    // Every node here is a master with slots or a replica (a restarted old master turns
    // into a replica of the node that took its slots).
    if (t.role === 'master' && t.slots.length === 0) return `node ${port}: master without slots`;
  }
  let covered = 0;
  for (const m of topo.filter((t) => t.role === 'master')) {
    if (!up.includes(m.port) && m.slots.length > 0) {
      return `master ${m.port} serves slots but is not running`;
    }
    for (const [a, b] of m.slots) covered += b - a + 1;
  }
  if (covered !== 16384) return `${covered} of 16384 slots served`;
  for (const r of topo.filter((t) => t.role === 'replica')) {
    if (!up.includes(r.port)) continue;
    const repl = await onNode(r.port, (c) => c.info('replication'), 1000).catch(() => '');
    if (!/master_link_status:up/.test(repl)) return `replica ${r.port}: link to master not up`;
  }
  return '';
}
