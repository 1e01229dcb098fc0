// DESIGN.md, "What survives what", the crash row, with real processes and real SIGKILLs:
// "crash: kill -9 → no ending, reads interrupted; every step that ended is kept, the one in
// flight is intended; a continue resolves the intended step by its policy, then goes on".
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const sameWorkflow = defineWorkflow({ name: "crash-three", async run() {} });

describe("what survives a crash (kill -9)", () => {
  it("crash inside step two: the run reads interrupted, step one is kept, step two is intended; a continue re-drives two and goes on", async () => {
    const file = tmpDb();
    const first = await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    expect(first.signal).toBe("SIGKILL");

    // Seen from another process, before any recover(): interrupted, with the step log as it was.
    const viewer = createEngine({ store: sqliteStore({ path: file }), workflows: [sameWorkflow] });
    const view = await viewer.get("r");
    expect(view.status).toBe("interrupted");
    expect(view.attempts.map((a) => a.ending)).toEqual(["interrupted"]);
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([
      ["one", "succeeded"],
      ["two", "intended"],
    ]);
    expect((await viewer.list({ status: "interrupted" })).map((r) => r.id)).toEqual(["r"]);
    await viewer.close();

    const second = await runWorker(file, "r", "continue");
    expect(second.code).toBe(0);
    expect(second.report?.result).toMatchObject({ status: "completed", attempt: 2 });

    const effects = readLedger(file).filter((e) => e.kind === "effect");
    // one ran once (its outcome was recorded); two ran twice with the same idempotency key,
    // the second time told about the first; three ran once.
    expect(effects.map((e) => [e.step, e.idempotencyKey, e.attempt])).toEqual([
      ["one", "r:one", 1],
      ["two", "r:two", 1],
      ["two", "r:two", 2],
      ["three", "r:three", 2],
    ]);
    expect(effects[2]!.previous).toMatchObject({ attempt: 1, idempotencyKey: "r:two" });
    expect(effects[0]!.pid).not.toBe(effects[3]!.pid);
  });
});
