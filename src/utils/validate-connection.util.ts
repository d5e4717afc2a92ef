// Validation of the module's `connection` option (url / redis / client / cluster / Sentinel):
// every problem found, one string each (the texts are in work-queue.messages.ts).
import { shownMasked } from '../../lib/internal.js';
import * as msg from '../work-queue.messages.js';
import { isObject, unknownKeys, type Bag } from './validate-bag.util.js';

const CONNECTION_KINDS = ['url', 'redis', 'client', 'cluster', 'sentinels'] as const;
/** ioredis options a BullMQ habit puts at the connection's top level. */
const FLAT_REDIS_OPTIONS = ['host', 'port', 'password', 'username', 'db', 'tls', 'path'];

export function connectionProblems(c: unknown, problems: string[], path = 'connection'): void {
  if (c === undefined) {
    problems.push(msg.connectionRequired(path));
    return;
  }
  if (!isObject(c)) {
    problems.push(msg.connectionNotObject(path, shownMasked(c)));
    return;
  }
  const given = CONNECTION_KINDS.filter((k) => c[k] !== undefined);
  // Sentinel options are flat ioredis options: any other key is one of theirs.
  const sentinel = c.sentinels !== undefined || c.name !== undefined;
  if (!sentinel) {
    const hints = Object.fromEntries(
      FLAT_REDIS_OPTIONS.map((k) => [k, msg.connectionFlatRedisOption(path, k)]),
    );
    unknownKeys(
      c,
      { url: true, redis: true, client: true, cluster: true },
      `${path}.`,
      problems,
      hints,
    );
  }
  if (given.length === 0 && !sentinel) problems.push(msg.connectionEmpty(path));
  if (given.length > 1) problems.push(msg.connectionKinds(path, given));
  if (sentinel) sentinelProblems(c, path, problems);
  if (c.url !== undefined) {
    let ok = false;
    if (typeof c.url === 'string') {
      try {
        ok = ['redis:', 'rediss:'].includes(new URL(c.url).protocol);
      } catch {
        ok = false;
      }
    }
    if (!ok) {
      problems.push(msg.badUrl(path, shownMasked(c.url)));
    }
  }
  if (c.redis !== undefined && !isObject(c.redis)) {
    problems.push(msg.badRedisOptions(path, shownMasked(c.redis)));
  } else if (c.redis?.sentinels !== undefined || c.redis?.name !== undefined) {
    sentinelProblems(c.redis, `${path}.redis`, problems);
  }
  if (c.client !== undefined) {
    const cl = c.client as Bag | null;
    if (
      !isObject(cl) ||
      typeof cl.duplicate !== 'function' ||
      typeof cl.quit !== 'function' ||
      typeof cl.defineCommand !== 'function'
    ) {
      problems.push(msg.badClient(path));
    }
  }
  if (c.cluster !== undefined) {
    if (!isObject(c.cluster)) {
      problems.push(msg.badCluster(path));
    } else {
      const { nodes, options } = c.cluster;
      if (!Array.isArray(nodes) || nodes.length === 0) {
        problems.push(msg.badClusterNodes(path, shownMasked(nodes)));
      }
      if (options !== undefined && !isObject(options)) {
        problems.push(msg.badClusterOptions(path));
      }
      unknownKeys(c.cluster, { nodes: true, options: true }, `${path}.cluster.`, problems);
    }
  }
}

/** Sentinel options (`connection` itself, or its `redis`): sentinels, the master's name, role. */
function sentinelProblems(o: Bag, path: string, problems: string[]): void {
  const { sentinels, name, role } = o;
  if (!Array.isArray(sentinels) || sentinels.length === 0) {
    problems.push(msg.badSentinels(path, shownMasked(sentinels)));
  } else {
    sentinels.forEach((s: unknown, i) => {
      const ok =
        isObject(s) &&
        (s.host === undefined || (typeof s.host === 'string' && s.host !== '')) &&
        (s.port === undefined ||
          (typeof s.port === 'number' && Number.isInteger(s.port) && s.port > 0 && s.port < 65536));
      if (!ok) problems.push(msg.badSentinel(path, i, shownMasked(s)));
    });
  }
  if (typeof name !== 'string' || name === '')
    problems.push(msg.badSentinelName(path, shownMasked(name)));
  if (role !== undefined && role !== 'master')
    problems.push(msg.badSentinelRole(path, shownMasked(role)));
}
