/**
 * What a message may show of what a user gave where a password can hide (a connection, a
 * client, options): URLs' passwords and secret-named fields masked (docs/reliability-and-security.md,
 * "No secrets in logs").
 */
import { shown } from './checks.js';

/** Keys whose values a message never shows (ioredis' password, sentinelPassword, tls key, …). */
const SECRET_KEY = /pass|secret|token|auth|cred|^key$|pfx|private/i;

/** The URL with its password (if any) masked: up to the last '@' (a password may hold '@' or '/'). */
export function redactUrl(url: string): string {
  return url.replace(/^([^/]*\/\/[^/@:]*:).*@(?=[^@]*$)/, '$1***@');
}

/** `v` as `shown` writes it, URL passwords and secret-named fields masked at any depth. */
export function shownMasked(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(redactUrl(v));
  if (typeof v !== 'object' || v === null) return shown(v);
  try {
    const masked = (k: string, x: unknown): unknown =>
      SECRET_KEY.test(k) ? '***' : typeof x === 'string' ? redactUrl(x) : x;
    return JSON.stringify(v, masked) ?? 'an object';
  } catch {
    return 'an object'; // (a cycle, a BigInt)
  }
}
