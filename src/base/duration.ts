/**
 * Lengths of time as people write them in settings and on the command line: "30d", "12h",
 * "15m", "30s", "500ms", "2w", or a number of ms. Used by retention and `steplog prune`.
 */

import { InvalidOptionError } from "./errors.js";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/** The length in ms, or INVALID_OPTION naming `where` and the forms it takes. */
export function parseDuration(where: string, value: unknown): number {
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return Math.ceil(value);
  const match = typeof value === "string" ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/.exec(value) : null;
  if (!match) {
    throw new InvalidOptionError(
      `${where}: ${JSON.stringify(value) ?? String(value)} is not a length of time; write a number and a unit, such as "30d", "12h", "15m", "30s", "500ms" or "2w" (or a number of ms).`,
    );
  }
  return Math.ceil(Number(match[1]) * UNITS[match[2]!]!);
}
