/**
 * Run ids: ULIDs (time-ordered, 26 characters). The ulid package draws its 16 random
 * characters with one crypto call each; this source hands out bytes from a buffer filled by
 * one call per 16 ids, which is most of the cost of starting a short run.
 */

import { randomFillSync } from "node:crypto";
import { ulid } from "ulid";

const pool = new Uint8Array(256);
let next = pool.length;

/** A byte from the crypto pool, as a fraction in [0, 1): 256 values over 32 characters, unbiased. */
function randomFraction(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

export function newRunId(): string {
  return ulid(undefined, randomFraction);
}
