/**
 * The fault suite's logs: what each worker process wrote to its file outside Redis (handler.ts),
 * read back and sorted by time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** What every line of a log names: when, which process, which job. */
interface LogLine {
  at: number;
  pid: number;
  queue: string;
  id: string;
}

export interface Exec extends LogLine {
  k: string;
  t: number;
  attempt: number;
}

export interface Done extends LogLine {
  k: string;
  t: number;
}

export interface LogEvent extends LogLine {
  kind: string;
  fields: string[];
}

export interface Logs {
  execs: Exec[];
  dones: Done[];
  events: LogEvent[];
}

export function readLogs(dir: string): Logs {
  const logs: Logs = { execs: [], dones: [], events: [] };
  for (const f of readdirSync(dir)) {
    const lines = readFileSync(path.join(dir, f), 'utf8').split('\n');
    for (const line of lines) {
      if (!line) continue;
      const [kind, at, pid, queue, id, ...rest] = line.split('\t') as [
        string,
        string,
        string,
        string,
        string,
        ...string[],
      ];
      const base = { at: Number(at), pid: Number(pid), queue, id };
      if (kind === 'E') {
        logs.execs.push({ ...base, k: rest[0]!, t: Number(rest[1]), attempt: Number(rest[2]) });
      } else if (kind === 'C') {
        logs.dones.push({ ...base, k: rest[0]!, t: Number(rest[1]) });
      } else {
        logs.events.push({ ...base, kind, fields: rest });
      }
    }
  }
  const byTime = (a: { at: number }, b: { at: number }) => a.at - b.at;
  logs.execs.sort(byTime);
  logs.dones.sort(byTime);
  logs.events.sort(byTime);
  return logs;
}
