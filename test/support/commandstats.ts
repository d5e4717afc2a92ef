/**
 * `INFO commandstats`, read one way for the tests and the benchmark (plain Node module: no
 * Jest imports).
 */
import type { Redis } from 'ioredis';

/**
 * `INFO commandstats` as `{ command: calls }` (server-wide counters, lower-case names;
 * subcommands as e.g. `client|setinfo`).
 */
export async function commandStats(client: Pick<Redis, 'info'>): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** `after - before` per command, only the ones that changed. */
export function statsDelta(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}
