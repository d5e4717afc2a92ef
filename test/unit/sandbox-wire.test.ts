// A forked sandbox's channel (lib/sandbox/wire.ts): every message arrives as V8's structured
// clone would give it, whether it went as JSON or as the clone's bytes; the common messages go
// as JSON; a value that cannot be cloned throws as the clone does.
import { deserialize, serialize } from 'node:v8';
import { isDeepStrictEqual, types } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { fromWire, toWire } from '../../lib/sandbox/wire.js';
import { fromThrown, toThrown } from '../../lib/sandbox/protocol.js';
import { jobMethods } from '../../lib/sandbox/job-fields.js';
import type { Job } from '../../lib/index.js';
import type { FromSandbox, JobFields, ToSandbox } from '../../lib/sandbox/protocol.js';

type Message = ToSandbox | FromSandbox;

/** Through Node's JSON channel (JSON.stringify, then JSON.parse on the other side). */
const across = (m: Message): Message => fromWire(JSON.parse(JSON.stringify(toWire(m))));
const cloneOf = (v: unknown): unknown => deserialize(serialize(v));

/** Any value structured clone takes: nested objects and arrays of every kind it knows. */
const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withSparseArray: true,
  withTypedArray: true,
  withUnicodeString: true,
  maxDepth: 4,
});

/**
 * Whether `v` holds an invalid Date: it clones (as one), but isDeepStrictEqual compares Dates by
 * their time, and NaN is not NaN.
 */
function invalidDate(v: unknown): boolean {
  if (types.isDate(v)) return Number.isNaN(v.getTime());
  if (typeof v !== 'object' || v === null) return false;
  if (types.isMap(v)) return [...v].some(([k, x]) => invalidDate(k) || invalidDate(x));
  if (types.isSet(v)) return [...v].some(invalidDate);
  return Object.values(v).some(invalidDate);
}

/** A job's fields as a run message carries them, with `data`. */
const jobWith = (data: unknown): JobFields => ({
  id: '7',
  data,
  name: undefined,
  priority: 5,
  attempt: 1,
  maxAttempts: 3,
  queueName: 'q',
  traceContext: undefined,
  addedAt: 1_700_000_000_000,
  startedAt: 1_700_000_000_005,
  group: 'tenant-1',
  parent: undefined,
});

/** The values of `m` that carry data (a message's own fields absent or undefined read alike). */
function values(m: Message): unknown[] {
  switch (m.t) {
    case 'run': {
      const j = m.job; // read field by field, as child.ts does
      return [
        j.id,
        j.data,
        j.name,
        j.priority,
        j.attempt,
        j.maxAttempts,
        j.queueName,
        j.traceContext,
        m.methods,
      ];
    }
    case 'done':
    case 'reply':
      return [m.ok, m.ok ? m.value : m.error];
    case 'call':
      return [m.method, m.args];
    case 'init':
      return [m.file, m.setupData];
    default:
      return [m];
  }
}

describe('a forked sandbox’s messages', () => {
  it('arrive as a structured clone, whatever they hold', () => {
    fc.assert(
      fc.property(anything, anything, (a, b) => {
        fc.pre(!invalidDate(a) && !invalidDate(b));
        const sent: Message[] = [
          { t: 'done', run: 1, ok: true, value: a },
          { t: 'reply', call: 2, ok: true, value: b },
          { t: 'call', run: 1, call: 3, method: 'progress', args: [a, b] },
          { t: 'init', file: '/x.js', setupData: a },
          {
            t: 'run',
            run: 4,
            job: jobWith(b),
            methods: ['progress'],
          },
        ];
        for (const m of sent) {
          const got = across(m);
          expect(got.t).toBe(m.t);
          // (Both sides cloned once more: JSON.parse makes objects of the test's realm, V8's
          // deserializer of Node's; a clone of a clone keeps all a clone keeps.)
          if (!isDeepStrictEqual(cloneOf(values(got)), cloneOf(values(m))))
            throw new Error(`${m.t}: ${String(JSON.stringify(values(got)))}`);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('go as JSON when JSON gives the same values (a job with JSON data, a JSON or no result)', () => {
    const run: Message = {
      t: 'run',
      run: 1,
      job: jobWith({
        to: 'a@example.com',
        n: [1, 2.5],
        nested: { ok: true, none: null },
        s: 'a\ud800\u2028',
      }),
      methods: ['progress', 'extend'],
    };
    const done: Message = { t: 'done', run: 1, ok: true, value: undefined };
    expect(toWire(run)).toBe(run);
    expect(toWire(done)).toBe(done);
    expect(toWire({ t: 'done', run: 1, ok: true, value: [{ a: 'b' }] })).toMatchObject({
      t: 'done',
    });
  });

  it('go as a clone where JSON would differ: shared objects stay shared, -0, undefined, Dates', () => {
    const shared = { n: 1 };
    const got = across({ t: 'done', run: 1, ok: true, value: { a: shared, b: shared } });
    const v = (got as { value: { a: object; b: object } }).value;
    expect(v.a).toBe(v.b);
    const named = Object.assign([1], { x: 2 }); // an array's own named property: cloned
    expect(
      (across({ t: 'done', run: 1, ok: true, value: named }) as { value: { x: number } }).value.x,
    ).toBe(2);
    const holey = [1, , 2]; // eslint-disable-line no-sparse-arrays
    for (const value of [-0, [undefined], { u: undefined }, new Date(0), holey, NaN, named]) {
      expect(toWire({ t: 'done', run: 1, ok: true, value })).toMatchObject({ t: 'v8' });
    }
  });

  it('go as a clone, or are refused as a clone refuses them, whatever their prototype says', () => {
    const reproto = <T extends object>(o: T, p: object | null): T =>
      Object.setPrototypeOf(o, p) as T;
    function args(...values: unknown[]): IArguments {
      void values;
      return arguments; // eslint-disable-line prefer-rest-params
    }
    class Tagged extends Array<number> {
      toJSON() {
        return 'x';
      }
    }
    const cases: unknown[] = [
      reproto(new Date(5), Object.prototype),
      reproto(new Map([[1, 2]]), null),
      reproto(new Set([1]), Object.prototype),
      reproto(new String('s'), Object.prototype),
      reproto(new Number(3), null),
      reproto(new Uint8Array([1, 2]), Object.prototype),
      args(1, 2),
      Tagged.from([1, 2]),
      Buffer.from('abc'),
      Array.from({ length: 1001 }, (_, i) => i),
    ];
    for (const value of cases) {
      const m: Message = { t: 'done', run: 1, ok: true, value };
      let cloned: unknown;
      let refused: unknown;
      try {
        cloned = cloneOf(value);
      } catch (e) {
        refused = e;
      }
      if (refused) {
        expect(() => toWire(m)).toThrow((refused as Error).message);
        continue;
      }
      expect(toWire(m)).toMatchObject({ t: 'v8' });
      const got = (across(m) as { value: unknown }).value;
      expect(isDeepStrictEqual(cloneOf(got), cloned)).toBe(true);
    }
    for (const value of [new Proxy({ a: 1 }, {}), new Proxy([1], {})])
      expect(() => toWire({ t: 'done', run: 1, ok: true, value })).toThrow();
  });

  it('cross whole with a toJSON on Object.prototype (JSON would send what it returns)', () => {
    Object.defineProperty(Object.prototype, 'toJSON', {
      value: () => 'replaced',
      configurable: true,
      writable: true,
    });
    try {
      const m: Message = { t: 'done', run: 1, ok: true, value: { a: [1] } };
      const got = across(m) as { t: string; value: unknown };
      expect(got.t).toBe('done');
      expect(isDeepStrictEqual(cloneOf(got.value), cloneOf({ a: [1] }))).toBe(true);
      expect(across({ t: 'done', run: 2, ok: true, value: undefined })).toMatchObject({
        t: 'done',
        run: 2,
      });
    } finally {
      delete (Object.prototype as { toJSON?: unknown }).toJSON;
    }
  });

  it('refuse what a clone refuses, with its error', () => {
    const f = () => 1;
    let cloneError: unknown;
    try {
      serialize({ f });
    } catch (e) {
      cloneError = e;
    }
    expect(() => toWire({ t: 'done', run: 1, ok: true, value: { f } })).toThrow(
      (cloneError as Error).message,
    );
  });
});

describe('the methods a sandboxed job is given (jobMethods)', () => {
  /** Like the worker's job: methods made on first read by getters, kept as own properties. */
  class Handle {
    id = '1';
    get progress(): () => number {
      const f = () => 1;
      Object.defineProperty(this, 'progress', { value: f, enumerable: true });
      return f;
    }
    get signal(): AbortSignal {
      return new AbortController().signal;
    }
    extend(): number {
      return 2;
    }
  }
  const names = (job: object) => jobMethods(job as Job).sort();

  it('are the same for every job of a class, the first (whose getters it reads) and the next', () => {
    expect(names(new Handle())).toEqual(['extend', 'progress']);
    const second = new Handle();
    expect(names(second)).toEqual(['extend', 'progress']);
    // Not read again for the next jobs: their methods are made when the sandbox calls them.
    expect(Object.keys(second)).toEqual(['id']);
    // A view of a job (the Nest layer's Proxy), own functions, an own property that hides one.
    expect(names(new Proxy(new Handle(), {}))).toEqual(['extend', 'progress']);
    expect(names(Object.assign(new Handle(), { extra: () => 3 }))).toEqual([
      'extend',
      'extra',
      'progress',
    ]);
    expect(names(Object.assign(new Handle(), { extend: 4 }))).toEqual(['progress']);
    expect(names({ a: () => 1, b: 2 })).toEqual(['a']);
  });
});

describe('thrown errors (toThrown / fromThrown)', () => {
  it('an AggregateError keeps its errors, each an Error of its name, message and fields', () => {
    // (Its `errors` is not enumerable: it arrived as a plain Error without them.)
    const inner = Object.assign(new TypeError('bad input'), { field: 'email' });
    const thrown = new AggregateError([inner, new RangeError('too big')], 'two problems');
    const back = fromThrown(cloneOf(toThrown(thrown)) as ReturnType<typeof toThrown>) as Error & {
      errors: Array<Error & { field?: string }>;
    };
    expect(back.name).toBe('AggregateError');
    expect(back.message).toBe('two problems');
    expect(back.errors.map((e) => [e.name, e.message, e.field])).toEqual([
      ['TypeError', 'bad input', 'email'],
      ['RangeError', 'too big', undefined],
    ]);
  });
});
