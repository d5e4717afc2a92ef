// How a forked sandbox's messages cross its IPC channel. The channel is Node's JSON one; a
// message whose values JSON carries exactly goes as it is (the common one: a job's fields with
// JSON data, a JSON or no result), any other as the bytes of V8's serializer in base64 — the
// structured clone that a thread's postMessage makes, and that the 'advanced' serialization
// sent. Same values on the other side either way; JSON is ~4× cheaper for small messages
// (Node's 'advanced' channel serializes in JavaScript, per message: ~20 µs more CPU per job
// each side, docs/performance.md).
import { types } from 'node:util';
import { deserialize, serialize } from 'node:v8';
import type { FromSandbox, ToSandbox } from './protocol.js';

/** A message sent as V8's bytes. */
interface Frame {
  readonly t: 'v8';
  readonly b: string;
}

/** Deeper than this, a value goes by V8's serializer (JSON would recurse as deep). */
const MAX_DEPTH = 100;
/**
 * Longer arrays go by V8's serializer: checking one for named properties lists its keys (a
 * string per index), where V8 copies it in C++.
 */
const MAX_ARRAY = 1000;

/**
 * Objects JSON would give back otherwise than a clone, whatever their prototype: a Proxy (a
 * clone refuses it), `arguments` and module namespaces, boxed primitives, Dates, RegExps,
 * errors, Maps, Sets and binary data given another prototype, and what a clone refuses.
 */
function special(v: object): boolean {
  const t = types;
  return (
    t.isProxy(v) ||
    t.isBoxedPrimitive(v) ||
    t.isDate(v) ||
    t.isRegExp(v) ||
    t.isNativeError(v) ||
    t.isMap(v) ||
    t.isSet(v) ||
    t.isWeakMap(v) ||
    t.isWeakSet(v) ||
    t.isPromise(v) ||
    t.isArgumentsObject(v) ||
    t.isModuleNamespaceObject(v) ||
    t.isAnyArrayBuffer(v) ||
    t.isArrayBufferView(v)
  );
}

/**
 * Whether JSON gives `v` back as structured clone would: no undefined (JSON drops or nulls it),
 * no NaN, ±Infinity or -0, no bigint, symbol or function, only plain objects and plain dense
 * arrays (by prototype, and none of the kinds `special` lists: a Date, Map, Buffer, class
 * instance, error or Proxy is cloned otherwise) without a `toJSON` (JSON would call it) nor,
 * for arrays, named properties; no object twice (clone keeps it shared, JSON would copy it) and
 * no `__proto__` key. Prototype first: a Buffer's keys are never listed.
 */
function exact(v: unknown, depth: number, seen: Set<object>): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v) && !Object.is(v, -0);
    case 'object':
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (depth > MAX_DEPTH || seen.has(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  const array = proto === Array.prototype;
  if (!array && proto !== Object.prototype && proto !== null) return false;
  if (special(v) || 'toJSON' in v || (array && (v as unknown[]).length > MAX_ARRAY)) return false;
  seen.add(v);
  const keys = Object.keys(v);
  if (array) {
    const a = v as unknown[];
    if (keys.length !== a.length) return false; // holes, or named properties
    for (let i = 0; i < a.length; i++) if (!exact(a[i], depth + 1, seen)) return false;
    return true;
  }
  const o = v as Record<string, unknown>;
  for (const k of keys) if (k === '__proto__' || !exact(o[k], depth + 1, seen)) return false;
  return true;
}

/** A value of a message: absent (undefined: its field is left out, read back undefined) or exact. */
const fits = (v: unknown): boolean => v === undefined || exact(v, 0, new Set());

/**
 * Whether JSON carries message `m` exactly: its own fields are strings, numbers and booleans,
 * its values (data, results, arguments) are checked. Errors and aborts (not the hot path) go by
 * V8 whatever they hold.
 */
function plain(m: ToSandbox | FromSandbox): boolean {
  switch (m.t) {
    case 'run':
      return fits(m.job.data);
    case 'done':
    case 'reply':
      return m.ok && fits(m.value);
    case 'call':
      return fits(m.args);
    case 'init':
      return fits(m.setupData);
    case 'abort':
      return false;
    default:
      return true; // ready, refused (strings), close
  }
}

/** `m` as it goes on the channel. Throws V8's DataCloneError for a value that cannot cross. */
export function toWire(m: ToSandbox | FromSandbox): object {
  // (A toJSON on Object.prototype would replace the message: a frame without prototype.)
  if (!('toJSON' in m) && plain(m)) return m;
  const frame = Object.create(null) as { t: 'v8'; b: string } satisfies Frame;
  frame.t = 'v8';
  frame.b = serialize(m).toString('base64');
  return frame;
}

/** A message as it came off the channel. */
export function fromWire<M extends ToSandbox | FromSandbox>(m: unknown): M {
  const f = m as Partial<Frame>;
  if (f.t === 'v8' && typeof f.b === 'string') return deserialize(Buffer.from(f.b, 'base64')) as M;
  return m as M;
}
