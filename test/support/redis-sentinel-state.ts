/**
 * What a local Sentinel setup (test/support/redis-sentinel.ts) says about itself: one command on
 * one member, whether the sentinels, the master and the replicas agree, and the sentinels'
 * announcements of a new master.
 */
import { Redis } from 'ioredis';
import { HOST } from '../../tools/redis-server.js';
import { onPort } from './redis-nodes.js';

/** One `+switch-master` as a sentinel announced it, and when this process heard it first. */
export interface SwitchEvent {
  from: number;
  to: number;
  at: number;
}

/** A `key:value` field of an INFO section. */
export const infoField = (text: string, f: string) =>
  new RegExp(`^${f}:(.*)$`, 'm').exec(text)?.[1]?.trim();

/** A flat `[k, v, k, v…]` reply of SENTINEL as an object. */
function pairs(reply: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  const a = reply as string[];
  for (let i = 0; i + 1 < a.length; i += 2) out[a[i]!] = a[i + 1]!;
  return out;
}

/**
 * The master's port once every sentinel of `sentinels` names the same master, knows the other
 * sentinels and the replicas among `up` (the running data nodes), the master says it is one and
 * every other running node replicates it with its link up; else why not.
 */
export async function stability(
  name: string,
  sentinels: number[],
  up: number[],
): Promise<{ port: number } | { why: string }> {
  let master: number | undefined;
  for (const s of sentinels) {
    const addr = (await onPort(s, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name))) as [
      string,
      string,
    ];
    const port = Number(addr[1]);
    if (master !== undefined && port !== master) return { why: 'sentinels disagree' };
    master = port;
    const info = pairs(await onPort(s, (c) => c.call('SENTINEL', 'MASTER', name)));
    if (info.flags !== 'master') return { why: `sentinel ${s}: master flags ${info.flags}` };
    if (Number(info['num-other-sentinels']) !== sentinels.length - 1)
      return { why: `sentinel ${s} knows ${info['num-other-sentinels']} other sentinels` };
    // (Not the sentinel's master-link-status: it reads a replica's INFO every 10 s only while
    // the master is up; the replicas' own INFO is checked below.)
    const replicas = ((await onPort(s, (c) => c.call('SENTINEL', 'REPLICAS', name))) as unknown[])
      .map(pairs)
      .filter((r) => r.flags === 'slave' && up.includes(Number(r.port)));
    if (replicas.length !== up.length - 1)
      return { why: `sentinel ${s} sees ${replicas.length} live replicas` };
  }
  if (master === undefined || !up.includes(master)) return { why: `master ${master} not running` };
  const own = String(await onPort(master, (c) => c.info('replication')));
  if (infoField(own, 'role') !== 'master') return { why: `${master} is not a master yet` };
  for (const port of up.filter((p) => p !== master)) {
    const text = String(await onPort(port, (c) => c.info('replication')));
    if (Number(infoField(text, 'master_port')) !== master)
      return { why: `${port} not replicating` };
    if (infoField(text, 'master_link_status') !== 'up') return { why: `${port}: link not up` };
  }
  return { port: master };
}

/** Every `+switch-master` of master `name` any of the sentinels announces from now on, once each. */
export async function onSwitch(
  name: string,
  sentinels: number[],
  listener: (e: SwitchEvent) => void,
): Promise<() => void> {
  const subs: Redis[] = [];
  // Every sentinel announces every switch once: the n-th announcement of any sentinel is switch
  // n (a switch back to an earlier master, A>B>A>B, is a new switch, not a repeat).
  const heard = new Map<number, number>();
  let emitted = 0;
  for (const port of sentinels) {
    const sub = new Redis({ host: HOST, port, retryStrategy: () => 200, lazyConnect: true });
    sub.on('error', () => {});
    sub.on('message', (_channel: string, text: string) => {
      // "<name> <old ip> <old port> <new ip> <new port>"
      const [n, , from, , to] = text.split(' ');
      if (n !== name) return;
      const nth = (heard.get(port) ?? 0) + 1;
      heard.set(port, nth);
      if (nth <= emitted) return;
      emitted = nth;
      listener({ from: Number(from), to: Number(to), at: Date.now() });
    });
    await sub.subscribe('+switch-master');
    subs.push(sub);
  }
  return () => subs.forEach((s) => s.disconnect());
}
