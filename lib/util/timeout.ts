/** The one promise-versus-timer race of the package: every bounded wait goes through it. */

/** Resolve `p`, or `undefined` after `ms` (the timer never outlives the race). */
export function within<X>(p: Promise<X>, ms: number): Promise<X | undefined>;
/** Resolve `p`, or after `ms` what `late()` returns (rejected if it throws). */
export function within<X, Y>(p: Promise<X>, ms: number, late: () => Y): Promise<X | Y>;
export function within<X, Y>(
  p: Promise<X>,
  ms: number,
  late?: () => Y,
): Promise<X | Y | undefined> {
  // One promise and one timer per race (bounded() runs one per Redis call of the hot paths).
  return new Promise<X | Y | undefined>((resolve, reject) => {
    const t = setTimeout(
      () => {
        if (!late) resolve(undefined);
        else {
          try {
            resolve(late());
          } catch (e) {
            reject(e);
          }
        }
      },
      Math.max(0, ms),
    );
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Wait `ms` (for back-off between retries; never a stand-in for a condition). */
export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
