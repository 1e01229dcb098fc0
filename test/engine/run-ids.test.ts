// Run ids are ULIDs, made by steplog itself (not by the ulid package, which costs an import):
// the ulid package, still installed, is the oracle that they are ULIDs of the time they say.
import { decodeTime, encodeTime, isValid } from "ulid";
import { describe, expect, it } from "vitest";
import { newRunId } from "../../src/engine/run-ids.js";

describe("newRunId", () => {
  it("is a ULID of the time given: 10 characters of the time in ms, 16 random, Crockford base 32", () => {
    for (const now of [0, 1, 31, 32, 1_700_000_000_123, Date.UTC(2026, 11, 6, 7, 20), 2 ** 48 - 1]) {
      const id = newRunId(now);
      expect(id, String(now)).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
      expect(isValid(id)).toBe(true);
      expect(id.slice(0, 10)).toBe(encodeTime(now, 10));
      expect(decodeTime(id)).toBe(now);
    }
  });

  it("takes the clock's time by default, and ids of later ms sort after earlier ones", () => {
    const before = Date.now();
    const id = newRunId();
    expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
    expect(decodeTime(id)).toBeLessThanOrEqual(Date.now());
    const ids = [1_000, 1_001, 40_000, 1_700_000_000_000].map((now) => newRunId(now));
    expect([...ids].sort()).toEqual(ids);
  });

  it("draws every random character afresh: 20,000 ids of one ms are distinct and use all 32 digits in each place", () => {
    const ids = Array.from({ length: 20_000 }, () => newRunId(1_700_000_000_000));
    expect(new Set(ids).size).toBe(ids.length);
    for (let place = 10; place < 26; place++) expect(new Set(ids.map((id) => id[place])).size, `place ${place}`).toBe(32);
  });
});
