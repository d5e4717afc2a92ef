/**
 * The first step of writing a flow (docs/internals/flows.md, "Writing a flow"): check its caller
 * ids and reserve one seq range per block (flow_reserve.lua). On one Redis one call for every
 * queue. On a Cluster one call per queue — the queues of roots with a caller id first, one after
 * the other in name order, each claiming those ids for this add (for CLAIM_MS at most), the
 * others only once every claim is held: of two adds of one flow at once (same root id) the
 * second is refused before it writes anything, in any queue. A refused or failed add releases
 * what it reserved and claimed (flow_release.lua).
 */
import { randomBytes } from 'node:crypto';
import { invalid } from '../../errors.js';
import { isCluster } from '../../redis/connection.js';
import type { ScriptArgs } from '../../scripts/define.js';
import type { FlowRunner } from './runner.js';
import type { FlowPlan } from './tree.js';

/** One level of one queue: its nodes (indexes in the plan) and its reservation. */
export interface Block {
  queue: string;
  depth: number;
  nodes: number[];
  reservation: string;
}

/**
 * How long a root's claim holds against other adds: a producer that died after claiming blocks
 * the id no longer. The add itself writes nothing after half of it (writer.ts).
 */
export const CLAIM_MS = 60_000;

/** What an add claimed and reserved on a Cluster, per queue (to release it if it fails). */
export interface Claims {
  token: string;
  /** Root caller ids to claim, by queue. */
  ids: Map<string, string[]>;
  /** Queues whose reservation succeeded. */
  reserved: Set<string>;
}

/** On a Cluster, what the add claims (its roots' caller ids) and reserves; on one Redis none. */
export function claimsOf(runner: FlowRunner, plan: FlowPlan): Claims | undefined {
  if (!isCluster(runner.client)) return undefined;
  const ids = new Map<string, string[]>();
  for (const r of plan.roots) {
    const n = plan.nodes[r]!;
    if (n.cid !== '') ids.set(n.queue, [...(ids.get(n.queue) ?? []), n.cid]);
  }
  return { token: randomBytes(9).toString('base64url'), ids, reserved: new Set() };
}

type Mode = 'reserve' | 'check';

/** A caller id another job or add holds, as the reservation's reply names it. */
export interface Taken {
  queue: string;
  cid: string;
  /** 't' taken by a job; 'c' claimed by another flow add not written yet. */
  why: string;
}

/**
 * Check the ids and reserve (step by step on a Cluster: see the header); give each block its
 * reservation. Resolves what was taken (then what a Cluster's calls reserved and claimed was
 * released; on one Redis nothing was reserved).
 */
export async function reserveBlocks(
  runner: FlowRunner,
  plan: FlowPlan,
  blocks: Block[],
  queues: string[],
  claims: Claims | undefined,
): Promise<Taken[]> {
  const argsOf = (qs: readonly string[], mode: Mode) => {
    const args: ScriptArgs['flow_reserve'] = [
      qs.length,
      mode === 'reserve' ? (claims?.token ?? '') : '',
      CLAIM_MS,
    ];
    for (const q of qs) {
      const ids = plan.nodes.filter((n) => n.queue === q && n.cid !== '').map((n) => n.cid);
      const claim = mode === 'reserve' ? (claims?.ids.get(q) ?? []) : [];
      const own = mode === 'reserve' ? blocks.filter((b) => b.queue === q) : [];
      args.push(ids.length, ...ids, claim.length, ...claim);
      args.push(own.length, ...own.map((b) => b.nodes.length));
    }
    return args;
  };
  const taken: Taken[] = [];
  const call = async (qs: readonly string[], mode: Mode) => {
    const reply = (await runner.runOn(qs, 'flow_reserve', argsOf(qs, mode))) as Array<
      string | number
    >;
    if (Number(reply[0]) === 1) {
      if (mode === 'check') return;
      let i = 1;
      for (const q of qs) {
        for (const b of blocks) if (b.queue === q) b.reservation = String(reply[i++]);
        claims?.reserved.add(q);
      }
      return;
    }
    for (let i = 1; i + 2 < reply.length; i += 3) {
      taken.push({
        queue: qs[Number(reply[i]) - 1]!,
        cid: String(reply[i + 1]),
        why: String(reply[i + 2]),
      });
    }
  };
  // Settled, not raced: a call that failed must not leave another's reservation unreleased.
  const all = async (calls: Array<Promise<void>>) => {
    const failed = (await Promise.allSettled(calls)).find((o) => o.status === 'rejected');
    if (failed) {
      await releaseBlocks(runner, blocks, claims);
      throw failed.reason;
    }
  };
  if (!claims) {
    await all([call(queues, 'reserve')]);
  } else {
    // The roots' queues one at a time, in one order for every add (two adds of flows sharing
    // root ids in several queues: the first queue decides, one of them goes on).
    const roots = queues.filter((q) => claims.ids.has(q)).sort();
    const rest = queues.filter((q) => !claims.ids.has(q));
    while (roots.length > 0 && taken.length === 0) await all([call([roots.shift()!], 'reserve')]);
    // Every claim held: the others are reserved; else only checked (every problem listed).
    const mode: Mode = taken.length === 0 ? 'reserve' : 'check';
    await all([...roots, ...rest].map((q) => call([q], mode)));
  }
  if (taken.length > 0) await releaseBlocks(runner, blocks, claims);
  return taken;
}

/**
 * Give back what a failed add claimed and reserved on a Cluster: its claims in every queue of its
 * roots (a reservation whose reply was lost may hold one) and the ranges it knows of. Best
 * effort: what is left lapses with its reservation (the orphan age).
 */
export async function releaseBlocks(
  runner: FlowRunner,
  blocks: Block[],
  claims: Claims | undefined,
): Promise<void> {
  if (!claims) return;
  const queues = new Set([...claims.ids.keys(), ...claims.reserved]);
  await Promise.all(
    [...queues].map((q) => {
      const ids = claims.ids.get(q) ?? [];
      const ranges = claims.reserved.has(q)
        ? blocks.filter((b) => b.queue === q).map((b) => b.reservation)
        : [];
      return runner
        .run(q, 'flow_release', [claims.token, ids.length, ...ids, ...ranges])
        .catch(() => undefined);
    }),
  );
  claims.reserved.clear();
}

/** The refusal of an add whose ids are `taken` (`path`: where a node is in the tree given). */
export function refused(plan: FlowPlan, taken: Taken[], path: (i: number) => string): Error {
  return invalid(
    taken.map(({ queue, cid, why }) => {
      const i = plan.nodes.findIndex((n) => n.queue === queue && n.cid === cid);
      const job = `${path(i)}: job ${JSON.stringify(cid)}`;
      return why === 'c'
        ? `${job} is being added to queue ${JSON.stringify(queue)} by another flow add (or one that failed: its claim lapses within ${CLAIM_MS / 1000} s)`
        : `${job} already exists in queue ${JSON.stringify(queue)} (or completed within its dedupe window)`;
    }),
    'flow refused',
  );
}
