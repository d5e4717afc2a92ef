// Starting a sandbox's thread or process with its Node options. Given none, a sandbox gets this
// process's own (`process.execArgv`: a TypeScript loader, `--enable-source-maps`…), as Node
// passes them on — less those that would make it run something else than the sandbox's entry
// (`-e`/`-p` code, `--test`, `--watch`, `--check`, `--interactive`) or refuse an entry file
// (`--input-type`).
import { fork, spawn, type ChildProcess } from 'node:child_process';
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

/**
 * A process running `entry`, its messages JSON (lib/sandbox/wire.ts: structured clones, as a
 * thread's); `guardGone`: its guard (below) has exited and been reaped (at once without one).
 */
export function startProcess(
  entry: URL,
  execArgv: string[] | undefined,
  memoryLimitMb: number | undefined,
): { child: ChildProcess; guardGone: Promise<void> } {
  const heap = memoryLimitMb ? [`--max-old-space-size=${memoryLimitMb}`] : [];
  const child = fork(fileURLToPath(entry), [], {
    execArgv: [...(execArgv ?? inheritedExecArgv() ?? process.execArgv), ...heap],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return { child, guardGone: guardOrphan(child) };
}

/**
 * A sandbox process exits when its worker's process is gone (child.ts: the IPC channel's
 * disconnect) — unless its job blocks its event loop, which then never sees it. A guard does it
 * then: `sh`, blocked reading a pipe only this process writes to (its end is closed on exec, so
 * no other child holds it), reads end-of-file when this process ends — even SIGKILLed — and
 * SIGKILLs the sandbox. It ends with the sandbox; none on Windows (no `sh`), nor when `sh`
 * cannot start (the sandbox then exits on disconnect alone, as before).
 */
function guardOrphan(child: ChildProcess): Promise<void> {
  if (process.platform === 'win32' || child.pid === undefined) return Promise.resolve();
  let guard: ChildProcess;
  try {
    guard = spawn('sh', ['-c', 'read _; kill -9 "$0" 2>/dev/null', String(child.pid)], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
  } catch {
    return Promise.resolve();
  }
  const gone = new Promise<void>((resolve) => {
    guard.once('exit', () => resolve());
    guard.once('error', () => resolve()); // no sh: no guard
  });
  guard.stdin?.on('error', () => {
    /* the guard gone first */
  });
  // Neither keeps this process alive.
  guard.unref();
  (guard.stdin as { unref?: () => void } | null)?.unref?.();
  child.once('exit', () => guard.kill());
  return gone;
}
