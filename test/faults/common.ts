/**
 * What run.ts and the scenario files under scenarios/ share: the command line, the suite's
 * constants and small helpers.
 */
import type { Fault, JobRec } from './records.js';

const argv = process.argv.slice(2);
export const QUICK = argv.includes('--quick');
export const ONLY = argv
  .find((a) => a.startsWith('--scenario='))
  ?.slice('--scenario='.length)
  .split(',');
export const SEED = Number(argv.find((a) => a.startsWith('--seed='))?.slice(7) ?? Date.now() % 1e9);
export const KEEP_LOGS = argv.includes('--keep-logs');

export const WORKERS = 4;
export const CONCURRENCY = 10;
export const CLEAN_INTERVAL_MS = 250;
/** How long after a connection fault clients may still be reconnecting and re-sending. */
export const RECONNECT_MS = 3_000;

/** mulberry32: a small seeded PRNG, so that a failing run can be replayed with --seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const say = (line: string) => process.stderr.write(`[faults] ${line}\n`);

export const scale = (full: number, quick: number) => (QUICK ? quick : full);

export const quickWork = (r: () => number) => ({ b: 'work' as const, ms: Math.floor(r() * 20) });

export const leaseExpiryExplained =
  (kinds: string[]) =>
  (reason: string, _job: JobRec | undefined, inLife: Fault[]): string | null => {
    const m = /^lease expired (\d+) times/.exec(reason);
    if (!m) return null;
    const n = inLife.filter((f) => kinds.includes(f.kind)).length;
    return n >= 1 ? `lease expired ${m[1]} times (faults: ${kinds.join('/')})` : null;
  };

export const fmt = (ms: number) =>
  Number.isFinite(ms)
    ? ms >= 1_000
      ? `${(ms / 1_000).toFixed(1)} s`
      : `${Math.round(ms)} ms`
    : '–';
