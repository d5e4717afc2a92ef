// uniquePrefix(): a key prefix of a test's own.
import { randomBytes } from 'node:crypto';
import { checkPrefix, invalidArgument } from './checks.js';

/** Longest label: with the random part ('-' and 12 hex digits) it must fit a prefix's 100. */
const MAX_LABEL = 80;

/**
 * A fresh key prefix, e.g. `test-3f9a1c07b2e4` (the label, '-', 48 random bits): give each test
 * its own, so that tests never see each other's jobs (also in parallel, on one Redis). `label`
 * is 1-80 characters of letters, digits, '.', '_', '-' or ':'.
 */
export function uniquePrefix(label = 'test'): string {
  const problems: string[] = [];
  checkPrefix('label', label, problems, MAX_LABEL);
  if (problems.length > 0) throw invalidArgument('uniquePrefix', problems);
  return `${label}-${randomBytes(6).toString('hex')}`;
}
