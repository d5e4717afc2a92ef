/** Small argument checks shared by every layer. */

/** A positive integer (a count, a duration in ms). */
export function isPosInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}
