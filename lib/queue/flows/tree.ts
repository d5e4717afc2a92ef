/**
 * A flow tree checked and encoded before anything is written: every problem of every node listed
 * with its path in the tree (`children[3].children[0].data: …`), then the nodes in order with
 * their queue, depth, parent and children — what FlowProducer reserves and writes.
 */
import { errorMessage, invalid, WorkQueueError } from '../../errors.js';
import {
  checkBackoff,
  checkGroupName,
  checkName,
  type ResolvedQueueOptions,
} from '../../options.js';
import type { ChildFailurePolicy, FlowNode } from '../../types/index.js';
import { delayMsProblem, hasLoneSurrogate, isPosInt, malformedProblem } from '../../util/checks.js';
import { encode, type Raw } from '../../job/codec.js';
import type { Meta } from '../../job/records.js';
import { siblingKeyProblems, type Keying } from './siblings.js';

/** Most nodes one add or addBulk writes (one script on one Redis). */
export const MAX_FLOW_NODES = 10_000;
/** Most payload bytes one add or addBulk writes, all nodes together. */
export const MAX_FLOW_BYTES = 64 * 1024 * 1024;

const NODE_KEYS: ReadonlySet<string> = new Set<keyof FlowNode>([
  'queue',
  'data',
  'name',
  'id',
  'priority',
  'group',
  'maxAttempts',
  'backoff',
  'delayMs',
  'onFailure',
  'children',
]);

/** What a BullMQ FlowProducer habit is called here. */
const BULLMQ_HINTS: Readonly<Record<string, string>> = {
  queueName: "BullMQ's queueName is `queue` here",
  opts: 'options go on the node itself: id, priority, group, maxAttempts, backoff, delayMs, onFailure',
  prefix: 'the prefix is the FlowProducer option `prefix`',
  failParentOnFailure: "use onFailure: 'fail-parent' (the default)",
  ignoreDependencyOnFailure: "use onFailure: 'ignore'",
  removeDependencyOnFailure: "use onFailure: 'remove'",
  jobId: "BullMQ's jobId is `id` here",
  attempts: "BullMQ's attempts is `maxAttempts` here",
  delay: "BullMQ's delay is `delayMs` here",
};

const POLICY: Readonly<Record<ChildFailurePolicy, 'f' | 'i' | 'r'>> = {
  'fail-parent': 'f',
  ignore: 'i',
  remove: 'r',
};

/** One node of a planned flow. */
export interface PlannedNode {
  /** Where it is in the tree given (`children[3].children[0]`; '' for the root of add). */
  path: string;
  queue: string;
  depth: number;
  /** Index of its parent in the plan, -1 for a root. */
  parent: number;
  children: number[];
  /** Its policy as its parent keeps it (f | i | r). */
  policy: string;
  /** Caller id, '' for none. */
  cid: string;
  payload: Raw;
  meta: Meta;
  priority: number;
  delayMs: number;
  /** Given once its seq is reserved. */
  seq: string;
}

export interface FlowPlan {
  nodes: PlannedNode[];
  /** The index of each tree's root, in order. */
  roots: number[];
}

const at = (path: string, field: string): string => (path === '' ? field : `${path}.${field}`);

/**
 * Per queue a flow names: the options its payloads are encoded with (undefined: the producer's),
 * or a string saying why flows may not name it.
 */
export type FlowQueueCheck = (queue: string) => ResolvedQueueOptions | string | undefined;

/**
 * Check and encode `trees` (`bulk`: their paths start with `[i]`). Throws one error listing
 * every problem (INVALID_ARGUMENT; PAYLOAD_TOO_LARGE or ENCODE_FAILED when that is the worst).
 */
export function planFlows(
  o: ResolvedQueueOptions,
  trees: readonly unknown[],
  bulk: boolean,
  check: FlowQueueCheck = () => undefined,
): FlowPlan {
  const problems: string[] = [];
  let payloadCode: 'ENCODE_FAILED' | 'PAYLOAD_TOO_LARGE' | undefined;
  const nodes: PlannedNode[] = [];
  const roots: number[] = [];
  const ids = new Map<string, string>();
  const keying: Keying[] = [];
  let bytes = 0;
  // Depth-first, children in order, without recursion (any depth); `up`: the nodes on the path
  // from the root (a node met again there is a cycle), left when its exit item is popped.
  type Item = { node: unknown; path: string; depth: number; parent: number; exit?: true };
  const stack: Item[] = [];
  const up = new Set<unknown>();
  for (let t = trees.length - 1; t >= 0; t--) {
    stack.push({ node: trees[t], path: bulk ? `[${t}]` : '', depth: 0, parent: -1 });
  }
  while (stack.length > 0) {
    const { node, path, depth, parent, exit } = stack.pop()!;
    if (exit) {
      up.delete(node);
      continue;
    }
    if (nodes.length >= MAX_FLOW_NODES) {
      problems.push(`more than ${MAX_FLOW_NODES} nodes: the most one add or addBulk writes`);
      break;
    }
    const where = path === '' ? 'the root' : path;
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      problems.push(`${where}: must be an object { queue, data, children?, … }`);
      continue;
    }
    if (up.has(node)) {
      problems.push(`${where}: a cycle: this node is its own ancestor`);
      continue;
    }
    const n = node as Record<string, unknown>;
    for (const key of Object.keys(n)) {
      if (NODE_KEYS.has(key)) continue;
      const hint = BULLMQ_HINTS[key];
      problems.push(
        `${at(path, key)}: unknown field${hint ? ` (${hint})` : ''}; known: ${[...NODE_KEYS].join(', ')}`,
      );
    }
    const queue = n.queue;
    const qProblems: string[] = [];
    checkName(at(path, 'queue'), queue, qProblems);
    problems.push(...qProblems.map((p) => p.replace(/ must be/, ': must be')));
    const own = qProblems.length === 0 ? check(queue as string) : undefined;
    if (typeof own === 'string') problems.push(`${at(path, 'queue')}: ${own}`);
    const meta = checkOptions(n, path, parent < 0, problems);
    let payload: Raw = '';
    try {
      payload = encode(typeof own === 'object' ? own : o, n.data);
      bytes += typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    } catch (e) {
      const code = e instanceof WorkQueueError ? e.code : 'ENCODE_FAILED';
      if (payloadCode !== 'ENCODE_FAILED')
        payloadCode = code === 'PAYLOAD_TOO_LARGE' ? code : 'ENCODE_FAILED';
      problems.push(`${at(path, 'data')}: ${errorMessage(e)}`);
    }
    if (typeof meta.i === 'string' && qProblems.length === 0) {
      const key = `${queue as string}\n${meta.i}`;
      const first = ids.get(key);
      if (first !== undefined) {
        problems.push(
          `${at(path, 'id')}: ${JSON.stringify(meta.i)} is also at ${first || 'the root'} in queue ${JSON.stringify(queue)}`,
        );
      } else ids.set(key, path);
    }
    const kids = n.children;
    if (kids !== undefined && !Array.isArray(kids)) {
      problems.push(`${at(path, 'children')}: must be an array of nodes`);
    }
    // A node with problems is planned anyway (the add is refused at the end): its children are
    // checked too.
    const index = nodes.length;
    nodes.push({
      path,
      queue: queue as string,
      depth,
      parent,
      children: [],
      policy: POLICY[(n.onFailure as ChildFailurePolicy | undefined) ?? 'fail-parent'],
      cid: meta.i ?? '',
      payload,
      meta,
      priority: meta.p ?? 5,
      delayMs: (n.delayMs as number | undefined) ?? 0,
      seq: '',
    });
    keying.push(
      qProblems.length > 0 ? 'none' : n.id === undefined ? 'counter' : meta.i ? 'id' : 'none',
    );
    if (parent < 0) roots.push(index);
    else nodes[parent]!.children.push(index);
    const list = Array.isArray(kids) ? (kids as readonly unknown[]) : [];
    up.add(node);
    stack.push({ node, path, depth, parent, exit: true });
    for (let c = list.length - 1; c >= 0; c--) {
      stack.push({
        node: list[c],
        path: at(path, `children[${c}]`),
        depth: depth + 1,
        parent: index,
      });
    }
  }
  problems.push(...siblingKeyProblems(nodes, keying));
  if (bytes > MAX_FLOW_BYTES) {
    problems.push(
      `payloads of ${bytes} bytes in all, over the most one add writes: ${MAX_FLOW_BYTES}`,
    );
    payloadCode ??= 'PAYLOAD_TOO_LARGE';
  }
  if (problems.length > 0) {
    const title = bulk ? 'flows refused' : 'flow refused';
    if (payloadCode) return throwWith(payloadCode, title, problems);
    throw invalid(problems, title);
  }
  return { nodes, roots };
}

function throwWith(
  code: 'ENCODE_FAILED' | 'PAYLOAD_TOO_LARGE',
  title: string,
  list: string[],
): never {
  throw new WorkQueueError(code, `${title}: ${list.join('; ')}`, list);
}

/** The options of node `n` as stored meta (i n p g m b); problems pushed with their paths. */
function checkOptions(
  n: Record<string, unknown>,
  path: string,
  root: boolean,
  problems: string[],
): Meta {
  const meta: Meta = {};
  const { id, name, priority, group, maxAttempts, backoff, delayMs, onFailure } = n;
  if (id !== undefined) {
    if (typeof id !== 'string' || id.length === 0 || id.length > 256)
      problems.push(`${at(path, 'id')}: must be a string of 1-256 characters`);
    else if (/^\d+$/.test(id))
      problems.push(`${at(path, 'id')}: ${JSON.stringify(id)} is all digits (generated ids are)`);
    else if (hasLoneSurrogate(id)) problems.push(malformedProblem(at(path, 'id'), id)!);
    else meta.i = id;
  }
  if (name !== undefined) {
    if (typeof name !== 'string' || name.length === 0 || name.length > 200)
      problems.push(`${at(path, 'name')}: must be a string of 1-200 characters`);
    else if (hasLoneSurrogate(name)) problems.push(malformedProblem(at(path, 'name'), name)!);
    else meta.n = name;
  }
  if (priority !== undefined) {
    if (!Number.isInteger(priority) || (priority as number) < 0 || (priority as number) > 9)
      problems.push(`${at(path, 'priority')}: must be an integer 0 (highest)..9 (lowest)`);
    else if (priority !== 5) meta.p = priority as number;
  }
  if (group !== undefined) {
    const g: string[] = [];
    checkGroupName(at(path, 'group'), group, g);
    problems.push(...g);
    if (g.length === 0) meta.g = group as string;
  }
  if (maxAttempts !== undefined) {
    if (!isPosInt(maxAttempts))
      problems.push(`${at(path, 'maxAttempts')}: must be a positive integer`);
    else meta.m = maxAttempts;
  }
  if (backoff !== undefined) {
    const b: string[] = [];
    checkBackoff(at(path, 'backoff'), backoff, b);
    // ('<path>: must …', as every other problem of a node.)
    problems.push(...b.map((p) => p.replace(/^(\S+) must /, '$1: must ')));
    if (b.length === 0) meta.b = backoff as Meta['b'];
  }
  const delay =
    delayMs === undefined ? undefined : delayMsProblem(`${at(path, 'delayMs')}:`, delayMs);
  if (delay) problems.push(delay);
  if (onFailure !== undefined) {
    if (root)
      problems.push(
        `${at(path, 'onFailure')}: only a child has one (what its failure does to its parent)`,
      );
    else if (typeof onFailure !== 'string' || !Object.hasOwn(POLICY, onFailure))
      problems.push(`${at(path, 'onFailure')}: must be 'fail-parent', 'ignore' or 'remove'`);
  }
  return meta;
}
