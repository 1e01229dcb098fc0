/**
 * Lengths of time as people write them in settings and on the command line: a number with a
 * unit, or several ("30d", "12h", "1h30m", "500ms"; units ms, s, m, h, d). Used by `steplog`'s
 * options (--timeout, --older-than) and createEngine's retention, which also takes ms as a number.
 */

import { InvalidOptionError } from "./errors.js";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The length in ms (rounded), or undefined when `text` is not one or is zero. */
export function durationMs(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, amount, , unit] of trimmed.matchAll(/(\d+(\.\d+)?)(ms|s|m|h|d)/g)) total += Number(amount) * UNITS[unit!]!;
  return total > 0 ? Math.round(total) : undefined;
}

/** A length given as a duration text or a number of ms (> 0), or INVALID_OPTION naming `where` and the forms it takes. */
export function parseDuration(where: string, value: unknown): number {
  const ms =
    typeof value === "number"
      ? Number.isFinite(value) && value > 0
        ? Math.ceil(value)
        : undefined
      : typeof value === "string"
        ? durationMs(value)
        : undefined;
  if (ms !== undefined) return ms;
  throw new InvalidOptionError(
    `${where}: ${JSON.stringify(value) ?? String(value)} is not a length of time; write a number and a unit, such as "30d", "12h", "1h30m", "30s" or "500ms" (or a number of ms above 0).`,
  );
}
