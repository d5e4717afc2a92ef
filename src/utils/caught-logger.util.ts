import type { LoggerService, LogLevel } from '@nestjs/common';

type Level = 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';

/**
 * The module's logger, each call caught: a logger that throws is not thrown into the module's
 * work (a worker-event hook's failure, a connection's 'error' event, a failed bootstrap's
 * clean-up logged; errors are logged, never thrown). Its methods are looked up at each call (a
 * spy set later is seen); a method it lacks is a no-op. (The queues wrap it again: lib/options.ts.)
 */
export function caughtLogger(logger: LoggerService): LoggerService {
  const call = (level: Level, args: unknown[]): void => {
    try {
      const f = logger[level] as ((...a: unknown[]) => unknown) | undefined;
      if (typeof f === 'function') f.apply(logger, args);
    } catch {
      // nothing more to tell
    }
  };
  return {
    log: (...a: unknown[]) => call('log', a),
    error: (...a: unknown[]) => call('error', a),
    warn: (...a: unknown[]) => call('warn', a),
    debug: (...a: unknown[]) => call('debug', a),
    verbose: (...a: unknown[]) => call('verbose', a),
    fatal: (...a: unknown[]) => call('fatal', a),
    setLogLevels: (levels: LogLevel[]) => {
      try {
        logger.setLogLevels?.(levels);
      } catch {
        // nothing more to tell
      }
    },
  };
}
