/**
 * The children of one parent as its getChildrenResults() / getChildrenFailures() key them:
 * `<queue>:<id>`, the id the caller's or, for a child without one, its counter number. Two
 * children with one key would share one entry (a result or an error silently lost), so a flow
 * where they could is refused before anything is written (docs/flows.md).
 */

/** What the check reads of a planned node (tree.ts's PlannedNode). */
interface PlannedNode {
  readonly path: string;
  readonly queue: string;
  /** Caller id, '' for none. */
  readonly cid: string;
  readonly children: readonly number[];
}

/**
 * How a planned node is keyed: by its caller id, by its counter number (no id given), or not
 * at all (its queue or its id has a problem of its own, listed already).
 */
export type Keying = 'id' | 'counter' | 'none';

/** A child as a problem names it: its path, queue and id. */
const named = (n: PlannedNode): string =>
  `${n.path} (queue ${JSON.stringify(n.queue)}, id ${JSON.stringify(n.cid)})`;

/** The problems of the children of every node of `nodes` whose keys are or could be alike. */
export function siblingKeyProblems(
  nodes: readonly PlannedNode[],
  keying: readonly Keying[],
): string[] {
  const problems: string[] = [];
  for (const parent of nodes) {
    if (parent.children.length < 2) continue;
    const byKey = new Map<string, PlannedNode>();
    const counted = new Map<string, PlannedNode[]>();
    for (const c of parent.children) {
      const n = nodes[c]!;
      if (keying[c] === 'counter') {
        const same = counted.get(n.queue);
        if (same) same.push(n);
        else counted.set(n.queue, [n]);
      }
      if (keying[c] !== 'id') continue;
      const key = `${n.queue}:${n.cid}`;
      const first = byKey.get(key);
      if (first === undefined) byKey.set(key, n);
      // (One id twice in one queue is listed as such by the planner.)
      else if (first.queue !== n.queue)
        problems.push(
          `${n.path}.id: its key in its parent's children results and failures (<queue>:<id>), ` +
            `${JSON.stringify(key)}, is also that of ${named(first)}: give one of them another id`,
        );
    }
    if (counted.size === 0) continue;
    // A key '<q>:<digits>' is also what a child of queue q without an id may get (its id a
    // number of q's counter): the child keyed so is of another queue (a caller id is never all
    // digits), its queue and id split where q's name has a colon.
    const warned = new Set<PlannedNode>();
    for (const [key, n] of byKey) {
      const m = /^(.*):\d+$/.exec(key);
      for (const free of (m && counted.get(m[1]!)) || []) {
        if (warned.has(free)) continue;
        warned.add(free);
        problems.push(
          `${free.path}: without an id its key in its parent's children results and failures ` +
            `is ${JSON.stringify(`${free.queue}:<its number>`)}, which could be ` +
            `${JSON.stringify(key)}, the key of ${named(n)}: give it an id`,
        );
      }
    }
  }
  return problems;
}
