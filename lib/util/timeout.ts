/** The one promise-versus-timer race of the package: every bounded wait goes through it. */

/** Resolve `p`, or `undefined` after `ms` (the timer never outlives the race). */
export function within<X>(p: Promise<X>, ms: number): Promise<X | undefined> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<undefined>((r) => {
      t = setTimeout(() => r(undefined), Math.max(0, ms));
    }),
  ]);
}

/** Wait `ms` (for back-off between retries; never a stand-in for a condition). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
