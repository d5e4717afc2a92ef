/** Payloads and results to and from what Redis stores, per the queue's codec. */
import { errorMessage, WorkQueueError } from '../errors.js';
import type { ResolvedQueueOptions } from '../options.js';
import { hasLoneSurrogate } from '../util/checks.js';

export type Raw = string | Buffer;

const encodeFailed = (m: string) => new WorkQueueError('ENCODE_FAILED', m);

/** Encode a job's data; throws ENCODE_FAILED or PAYLOAD_TOO_LARGE. */
export function encode(o: ResolvedQueueOptions, data: unknown): Raw {
  let out: Raw;
  switch (o.codec) {
    case 'json': {
      if (data === undefined) throw encodeFailed('data is undefined (use null for "no data")');
      let s: string | undefined;
      try {
        s = JSON.stringify(data);
      } catch (e) {
        throw encodeFailed(`data cannot be encoded as JSON: ${errorMessage(e)}`);
      }
      if (s === undefined)
        throw encodeFailed(`data of type ${typeof data} cannot be encoded as JSON`);
      out = s;
      break;
    }
    case 'string':
      if (typeof data !== 'string')
        throw encodeFailed(`codec 'string' takes strings, got ${typeof data}`);
      // (Stored as UTF-8: a lone surrogate would read back as U+FFFD.)
      if (hasLoneSurrogate(data))
        throw encodeFailed(`codec 'string' stores UTF-8: data has a lone UTF-16 surrogate`);
      out = data;
      break;
    case 'buffer':
      if (!Buffer.isBuffer(data))
        throw encodeFailed(`codec 'buffer' takes Buffers, got ${typeof data}`);
      out = data;
      break;
  }
  return withinLimit('payload', out, o.maxPayloadBytes);
}

/** `out` when it is at most `max` bytes, else PAYLOAD_TOO_LARGE naming it `what`. */
function withinLimit<V extends Raw>(what: string, out: V, max: number): V {
  // A string takes at most 3 UTF-8 bytes per UTF-16 unit: short ones need no count.
  if (typeof out === 'string' && out.length * 3 <= max) return out;
  const size = typeof out === 'string' ? Buffer.byteLength(out) : out.length;
  if (size > max) {
    throw new WorkQueueError(
      'PAYLOAD_TOO_LARGE',
      `${what} is ${size} bytes, over maxPayloadBytes ${max}`,
    );
  }
  return out;
}

/** Decode a stored payload; bad JSON throws parseJson's error (its size, never its bytes). */
export function decode<T>(o: ResolvedQueueOptions, raw: Raw): T {
  switch (o.codec) {
    case 'json':
      return parseJson<T>(raw.toString(), 'payload');
    case 'string':
      return raw.toString() as T;
    case 'buffer':
      return (Buffer.isBuffer(raw) ? raw : Buffer.from(raw)) as T;
  }
}

/**
 * `text` parsed as JSON. Its error says what was not valid JSON and its size, never quoting it
 * (JSON.parse's message quotes its first bytes: a payload or a result may hold secrets).
 */
export function parseJson<T>(text: string, what: 'payload' | 'result'): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`${what} is not valid JSON (${Buffer.byteLength(text)} bytes)`);
  }
}

/**
 * A handler's result as stored (JSON; undefined is stored as null), at most `maxBytes` (the
 * queue's maxPayloadBytes: what is kept stays bounded); throws ENCODE_FAILED or PAYLOAD_TOO_LARGE.
 */
export function encodeResult(result: unknown, maxBytes: number): string {
  // (JSON.stringify answers undefined for these: not stored as null, as if the handler had
  // returned nothing; a sandbox's structured clone refuses them too.)
  if (typeof result === 'function' || typeof result === 'symbol')
    throw encodeFailed(`result cannot be encoded as JSON: it is a ${typeof result}`);
  let out: string;
  try {
    out = JSON.stringify(result ?? null) ?? 'null';
  } catch (e) {
    throw encodeFailed(`result cannot be encoded as JSON: ${errorMessage(e)}`);
  }
  return withinLimit('result', out, maxBytes);
}

/** A progress value as stored and published (JSON, at most 64 KiB). */
export function encodeProgress(value: unknown): string | undefined {
  let encoded: string | undefined;
  try {
    encoded = JSON.stringify(value);
  } catch (e) {
    throw encodeFailed(`progress value cannot be encoded: ${errorMessage(e)}`);
  }
  // (64 KiB of UTF-8: the bytes stored, not the string's length.)
  return encoded === undefined || Buffer.byteLength(encoded) > 64 * 1024 ? undefined : encoded;
}
