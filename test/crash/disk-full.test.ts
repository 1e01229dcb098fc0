// Disk full (SQLite's max_page_count, which needs no root), at every write of a run in turn:
// a clear error, no function called without its intent, nothing reported as succeeded that was
// not recorded, and the run resumable once space is back.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { readLedger, runWorker } from "../helpers/worker.js";

describe("disk full", () => {
  it("at each write in turn (intent, outcome, attempt ending): clear error, no effect without intent, resumable", async () => {
    const seen = { intent: false, outcomeLost: false, completed: false, refusedAtStart: false };
    for (let limit = 8; limit < 40 && !seen.completed; limit++) {
      const file = tmpDb();
      const env = { STORE_PRAGMAS: JSON.stringify({ max_page_count: limit }), BIG_VALUES: "3000" };
      const first = await runWorker(file, "r", "start", env);
      expect(first.code, first.stderr).toBe(0);
      const report = first.report!;
      if (report.refused) {
        expect(report.refused.code).toBe("STORE_WRITE_FAILED");
        expect(report.refused.message).toContain("database or disk is full");
        seen.refusedAtStart = true;
        expect(readLedger(file)).toEqual([]);
        continue;
      }
      const result = report.result!;
      if (result.status === "completed") {
        seen.completed = true;
        continue;
      }
      expect(result.status).toBe("failed");
      expect(result.error.code).toBe("STORE_WRITE_FAILED");
      expect(result.error.message).toMatch(/Could not record .* in sqlite store at .*: database or disk is full/);
      if (/the intent of step/.test(result.error.message)) seen.intent = true;

      const db = inspectDb(file);
      expect(db.integrity).toBe("ok");
      const effects = readLedger(file).filter((e) => e.kind === "effect");
      // Every function call had its intent durable first.
      for (const e of effects)
        expect(
          db.steps.some((s) => s.key === e.step && s.attempt === 1),
          `${e.step} ran without an intent`,
        ).toBe(true);
      // Nothing is recorded as succeeded whose function did not return, and the run is not completed.
      for (const s of db.steps.filter((s) => s.status === "succeeded")) expect(effects.some((e) => e.step === s.key)).toBe(true);
      expect(db.runs[0]!.status).not.toBe("completed");
      if (db.steps.some((s) => s.status === "intended" && effects.some((e) => e.step === s.key))) seen.outcomeLost = true;

      // Space is back: the run continues and completes, each step succeeded exactly once.
      const second = await runWorker(file, "r", "continue");
      expect(second.report?.result, JSON.stringify(second.report)).toMatchObject({ status: "completed" });
      const after = inspectDb(file);
      expect(after.integrity).toBe("ok");
      for (const key of ["one", "two", "three"]) expect(after.steps.filter((s) => s.key === key && s.status === "succeeded")).toHaveLength(1);
      fs.rmSync(`${file}.ledger`, { force: true });
    }
    // The sweep crossed every kind of failure point and ended with a limit that fits.
    expect(seen).toEqual({ intent: true, outcomeLost: true, completed: true, refusedAtStart: true });
  }, 120_000);
});
