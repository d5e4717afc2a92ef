// Starting a sandbox's thread or process with its Node options. Given none, a sandbox gets this
// process's own (`process.execArgv`: a TypeScript loader, `--enable-source-maps`…), as Node
// passes them on — less those that would make it run something else than the sandbox's entry
// (`-e`/`-p` code, `--test`, `--watch`, `--check`, `--interactive`) or refuse an entry file
// (`--input-type`).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';

/** Options followed by a value (unless written `--option=value`). */
const WITH_VALUE = new Set(['-e', '--eval', '-p', '--print', '--input-type', '--watch-path']);
const ALONE = new Set(['-i', '--interactive', '--test', '--watch', '-c', '--check']);

/** `argv` without the options above; undefined when it has none (Node's own inheritance). */
export function inheritedExecArgv(
  argv: readonly string[] = process.execArgv,
): string[] | undefined {
  const kept: string[] = [];
  let dropped = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.split('=')[0]!;
    if (WITH_VALUE.has(name)) {
      if (!arg.includes('=')) i++;
      dropped = true;
    } else if (ALONE.has(name) || name.startsWith('--test-')) dropped = true;
    else kept.push(arg);
  }
  return dropped ? kept : undefined;
}

/**
 * A thread running `entry`. Inherited options that a thread refuses (V8 and process options:
 * Node filters them only when it inherits them itself) are left out.
 */
export function startThread(
  entry: URL,
  execArgv: string[] | undefined,
  memoryLimitMb: number | undefined,
): Thread {
  const resourceLimits = memoryLimitMb ? { maxOldGenerationSizeMb: memoryLimitMb } : undefined;
  const start = (argv: string[] | undefined) =>
    new Thread(entry, {
      ...(argv ? { execArgv: argv } : {}),
      ...(resourceLimits ? { resourceLimits } : {}),
    });
  const inherited = execArgv === undefined ? inheritedExecArgv() : undefined;
  try {
    return start(execArgv ?? inherited);
  } catch (e) {
    // "Initiated Worker with invalid execArgv flags: --a, --b"
    const refused =
      (e as { code?: string; message?: string }).code === 'ERR_WORKER_INVALID_EXEC_ARGV';
    if (!inherited || !refused) throw e;
    const listed = new Set((e as Error).message.split(': ').pop()!.split(', '));
    return start(inherited.filter((a) => !listed.has(a)));
  }
}

/** A process running `entry`, its messages JSON (lib/sandbox/wire.ts: structured clones, as a thread's). */
export function startProcess(
  entry: URL,
  execArgv: string[] | undefined,
  memoryLimitMb: number | undefined,
): ChildProcess {
  const heap = memoryLimitMb ? [`--max-old-space-size=${memoryLimitMb}`] : [];
  return fork(fileURLToPath(entry), [], {
    execArgv: [...(execArgv ?? inheritedExecArgv() ?? process.execArgv), ...heap],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}
