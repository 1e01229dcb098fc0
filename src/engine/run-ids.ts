/**
 * Run ids: ULIDs (time-ordered, 26 characters: 10 of the time in ms, 16 random, in Crockford's
 * base 32). Made here rather than by the ulid package, which gave the same characters: drawing
 * its 16 random characters with one crypto call each was most of the cost of starting a short
 * run, and loading it was a tenth of `import "steplog"`; this source hands out bytes from a
 * buffer filled by one call per 16 ids, from the Web Crypto global (node:crypto, which an import
 * of steplog would otherwise load for this alone, is loaded by the first id instead).
 */

const BASE32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

const pool = new Uint8Array(256);
let next = pool.length;

/** A random base-32 digit: a byte from the crypto pool, 256 values over 32 digits, unbiased. */
function randomDigit(): string {
  if (next === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    next = 0;
  }
  return BASE32[pool[next++]! >> 3]!;
}

/** A ULID for `now` (ms since the epoch; the clock's by default). */
export function newRunId(now = Date.now()): string {
  let id = "";
  for (let i = 0; i < 16; i++) id = randomDigit() + id;
  for (let i = 0, time = now; i < 10; i++, time = Math.floor(time / 32)) id = BASE32[time % 32]! + id;
  return id;
}
