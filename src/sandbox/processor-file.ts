// The file that declares a sandboxed processor class: taken from the call stack when
// @Processor() runs, so that each sandbox can import it (and re-run its decorators).
import { pathToFileURL } from 'node:url';

/**
 * The file of the code that called `fn` (as a `file:` URL), or undefined when the stack does not
 * say (then the sandbox options must name it).
 */
export function callerFile(fn: (...args: never[]) => unknown): string | undefined {
  const holder: { stack?: NodeJS.CallSite[] } = {};
  const { prepareStackTrace, stackTraceLimit } = Error;
  try {
    Error.stackTraceLimit = 10;
    Error.prepareStackTrace = (_, sites) => sites;
    Error.captureStackTrace(holder, fn);
    for (const site of holder.stack ?? []) {
      const file = site.getFileName();
      if (!file || file.startsWith('node:')) continue;
      return file.startsWith('file:') ? file : pathToFileURL(file).href;
    }
    return undefined;
  } finally {
    Error.prepareStackTrace = prepareStackTrace;
    Error.stackTraceLimit = stackTraceLimit;
  }
}
