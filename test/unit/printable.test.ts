// Values without a string form, as messages: errorMessage, option problems (shown), job log lines
// and a sandbox's thrown value all show them, never throw (String() threw for these).
import { expect, it } from '@jest/globals';
import { errorMessage } from '../../lib/errors.js';
import { logLine } from '../../lib/job/logs.js';
import { toThrown } from '../../lib/sandbox/protocol.js';
import { printable, shown } from '../../lib/util/checks.js';

const cyclic = Object.create(null) as Record<string, unknown>;
cyclic.self = cyclic;
const noStringForm = {
  fn: () => 1, // (does not survive structured clone: a sandbox sends it as text)
  toString() {
    throw new Error('no string form');
  },
  toJSON() {
    throw new Error('no JSON form');
  },
};
const hostileProxy = new Proxy(
  {},
  {
    get() {
      throw new Error('trap');
    },
    getPrototypeOf() {
      throw new Error('trap');
    },
  },
);

it.each([
  ['a cycle without a prototype', cyclic, '[object Object]'],
  ['toString and toJSON that throw', noStringForm, '[object Object]'],
  ['a proxy whose traps throw', hostileProxy, '(a value that cannot be shown)'],
  ['a BigInt', 10n, '10'],
  ['a Symbol', Symbol('s'), 'Symbol(s)'],
  ['an object', { a: 1 }, '{"a":1}'],
])('%s: printable, errorMessage, shown and a log line show it', (_, value, text) => {
  expect(printable(value)).toBe(text);
  expect(errorMessage(value)).toBe(text);
  expect(shown(value)).toBe(text);
  expect(logLine(value)).toBe(text);
});

it("an Error whose message is not a string, and a sandbox's thrown value without a string form", () => {
  const odd = new Error('x');
  (odd as unknown as { message: unknown }).message = cyclic;
  expect(errorMessage(odd)).toBe('[object Object]');
  expect(toThrown(noStringForm)).toEqual({ value: '[object Object]' });
  // (instanceof Error asks the proxy's prototype trap: a sandbox died of it.)
  expect(toThrown(hostileProxy)).toEqual({ value: '(a value that cannot be shown)' });
  const badGetter = new Error('x');
  Object.defineProperty(badGetter, 'message', {
    get() {
      throw new Error('getter');
    },
  });
  expect(errorMessage(badGetter)).toBe('[object Error]');
  expect(toThrown(badGetter)).toEqual({ value: '{}' });
  expect(toThrown(odd)).toMatchObject({
    error: expect.objectContaining({ message: '[object Object]' }),
  });
});
