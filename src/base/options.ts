/**
 * Options objects are checked for keys steplog does not know: a typo (`timeout` for
 * `timeoutMs`, `fromstep`) was silently ignored, and the run did something else than asked.
 * Each caller lists its keys as a record over its options type, so the compiler keeps the list
 * whole when an option is added.
 */

import { InvalidOptionError, type SteplogErrorDetails } from "./errors.js";

/** Every key an options type has (string keys; symbols are steplog's own and never checked). */
export type KnownKeys<T> = { readonly [K in keyof T & string]-?: true };

/**
 * Refuse (INVALID_OPTION) an options object that is not an object, or that has a key `known`
 * lacks, naming the key and the nearest known one. Undefined passes: every option has a default.
 */
export function checkKnownKeys(where: string | (() => string), options: unknown, known: KnownKeys<object>, details: SteplogErrorDetails = {}): void {
  if (options === undefined) return;
  // Built only for a message: ctx.step checks its options on every call.
  const place = () => (typeof where === "string" ? where : where());
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new InvalidOptionError(
      `${place()}: the options must be an object, got ${options === null ? "null" : Array.isArray(options) ? "an array" : typeof options}.`,
      details,
    );
  }
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(known, key)) continue;
    const names = Object.keys(known);
    const near = nearest(key, names);
    throw new InvalidOptionError(
      `${place()}: unknown option ${JSON.stringify(key)}${near === undefined ? "." : `; did you mean ${JSON.stringify(near)}?`} ` +
        `Nothing was done. The options are ${names.map((n) => JSON.stringify(n)).join(", ")}.`,
      details,
    );
  }
}

/** The known name closest to `given` (case aside, by edit distance), when it is close enough to be a typo. */
export function nearest(given: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    const d = distance(given.toLowerCase(), name.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [name, d];
  }
  if (best === undefined) return undefined;
  // One inside the other ("attempts" in "maxAttempts") is a near miss too, when it is not a single letter.
  const [a, b] = [given.toLowerCase(), best.toLowerCase()];
  const inside = Math.min(a.length, b.length) >= 3 && (a.includes(b) || b.includes(a));
  return bestDistance <= Math.max(2, Math.floor(given.length / 3)) || inside ? best : undefined;
}

/** Edit distance, two letters swapped counting as one edit (the names are short: the quadratic table is fine). */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}
