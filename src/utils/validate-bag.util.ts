// Small helpers of the option validators: a plain-object check and the unknown-key report.
import * as msg from '../work-queue.messages.js';

export type Bag = Record<string, unknown>;

export const isObject = (v: unknown): v is Bag =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function unknownKeys(
  o: Bag,
  known: Record<string, true>,
  path: string,
  problems: string[],
  hints: Record<string, string> = {},
): void {
  for (const k of Object.keys(o)) {
    if (known[k] || o[k] === undefined) continue;
    problems.push(hints[k] ?? msg.unknownOption(path, k));
  }
}
