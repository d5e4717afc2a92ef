/** Small helpers shared by the benchmark orchestrator (run.ts) and its children (child.ts). */
import type { Redis } from 'ioredis';
import { commandStats } from '../support/commandstats.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Untimed warm-up (JIT): `round(k)` for k = 0, 1, … until `ms` have passed since the first
 * began (at least one round). Returns the number of rounds run.
 */
export async function warmUp(ms: number, round: (k: number) => Promise<void>): Promise<number> {
  const until = performance.now() + ms;
  let k = 0;
  do await round(k++);
  while (performance.now() < until);
  return k;
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export const wallMs = () => performance.timeOrigin + performance.now();

/** `INFO <section>` as a map of field → raw value. */
export async function info(client: Redis, section: string): Promise<Map<string, string>> {
  const text = await client.info(section);
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

export async function infoNumber(client: Redis, section: string, field: string): Promise<number> {
  const v = (await info(client, section)).get(field);
  if (v === undefined) throw new Error(`INFO ${section} has no field ${field}`);
  return Number(v);
}

/** Calls per command from `INFO commandstats` (e.g. `evalsha` → 1234). */
export async function commandCalls(client: Redis): Promise<Map<string, number>> {
  return new Map(Object.entries(await commandStats(client)));
}

/** Per-command call deltas between two `commandCalls` snapshots (only non-zero ones). */
export function callDeltas(
  before: Map<string, number>,
  after: Map<string, number>,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const [cmd, calls] of after) {
    const d = calls - (before.get(cmd) ?? 0);
    if (d !== 0) out.set(cmd, d);
  }
  return out;
}

/** The q-quantile (0..1) of already sorted numbers, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function errorText(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
