/**
 * Job log lines (`job.log`, docs/history.md): a message as a line, a run's lines waiting to be
 * sent, and lines as one script argument (records `<seq>:<bytes>:<line>`, and `<seq>:d<n>:` for
 * n lines dropped before sending; read by logs_apply in lib/scripts/lib/history.lua).
 */
import { errorMessage } from '../errors.js';
import { lineUnits } from '../util/call-share.js';
import { printable } from '../util/checks.js';

/** Longest line kept, in UTF-8 bytes (a longer one is cut there and ends with '…'). */
export const MAX_LOG_LINE = 2048;

/** Lines of one attempt not sent yet; `dropped`: lines the cap dropped before they were sent. */
export interface LogBatch {
  lines: string[];
  dropped: number;
}

/** A log message as a line: a string as given, an Error's message, anything else as JSON. */
export function logLine(message: unknown): string {
  let line: string;
  if (typeof message === 'string') line = message;
  else line = isError(message) ? errorMessage(message) : printable(message);
  if (line.length * 3 <= MAX_LOG_LINE || Buffer.byteLength(line) <= MAX_LOG_LINE) return line;
  // '…' is 3 bytes; a character cut in two is dropped (no replacement character).
  const cut = Buffer.from(line)
    .subarray(0, MAX_LOG_LINE - 3)
    .toString();
  return cut.replace(/\uFFFD$/, '') + '…';
}

/** Whether `v` is an Error (false for a proxy whose prototype trap throws). */
function isError(v: unknown): boolean {
  try {
    return v instanceof Error;
  } catch {
    return false;
  }
}

/** Add `line` to `batch`, keeping at most `max` lines (the newest). */
export function addLine(batch: LogBatch, line: string, max: number): void {
  batch.lines.push(line);
  if (batch.lines.length > max) {
    batch.lines.shift();
    batch.dropped += 1;
  }
}

/**
 * `batch` split at `budget` units: the first lines that fit (with the count of those dropped
 * before them) and the rest (undefined: none left); undefined first when none fits.
 */
export function splitLogs(
  batch: LogBatch,
  budget: number,
): [LogBatch | undefined, LogBatch | undefined] {
  const { lines } = batch;
  let n = 0;
  for (let units = 0; n < lines.length && (units += lineUnits(lines[n]!)) <= budget;) n++;
  if (n === lines.length) return [batch, undefined];
  const rest = { lines: lines.slice(n), dropped: 0 };
  if (n === 0 && batch.dropped === 0) return [undefined, rest];
  return [{ lines: lines.slice(0, n), dropped: batch.dropped }, rest];
}

/** The lines of jobs as one argument ('' when none). */
export function packLogs(jobs: Iterable<{ seq: string; logs: LogBatch | undefined }>): string {
  let out = '';
  for (const { seq, logs } of jobs) {
    if (!logs) continue;
    if (logs.dropped > 0) out += `${seq}:d${logs.dropped}:`;
    for (const line of logs.lines) out += `${seq}:${Buffer.byteLength(line)}:${line}`;
  }
  return out;
}
