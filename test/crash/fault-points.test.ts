// Every fault point × every step of a three-step workflow, each a real child process killed
// with SIGKILL, then a continue in a second process. After each: the store is intact, no
// succeeded step ran again, the run completes, and every function ran exactly as often as
// its policy allows (idempotent: re-driven once, with the same key, when cut off after it ran).
import { describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const STEPS = ["one", "two", "three"] as const;
const POINTS = ["before-intent", "after-intent", "after-fn", "after-outcome", "before-end"] as const;

/** How many times each step's function runs in total when the first attempt dies at point@step. */
function expectedCalls(point: (typeof POINTS)[number], crashed: string): Record<string, number> {
  const calls: Record<string, number> = { one: 1, two: 1, three: 1 };
  // Cut off after the function ran but before its outcome was durable: an idempotent step is re-driven.
  if (point === "after-fn") calls[crashed] = 2;
  // Group commit: an idempotent step's outcome commits with the next step's intent, so a crash
  // just before that intent loses the previous outcome too, and that step is re-driven (same key).
  const previous = STEPS[STEPS.indexOf(crashed as (typeof STEPS)[number]) - 1];
  if (point === "before-intent" && previous) calls[previous] = 2;
  return calls;
}

describe("the crash suite: SIGKILL at every fault point of every step", () => {
  const cells: Array<[(typeof POINTS)[number], string]> = POINTS.flatMap((point) =>
    point === "before-end" ? [[point, "three"] as [(typeof POINTS)[number], string]] : STEPS.map((step) => [point, step] as [(typeof POINTS)[number], string]),
  );

  it.each(cells)("%s@%s", async (point, step) => {
    const file = tmpDb();
    const first = await runWorker(file, "r", "start", { STEPLOG_FAULT: `${point}@${step}` });
    expect(first.signal, first.stderr).toBe("SIGKILL");
    const afterCrash = inspectDb(file);
    expect(afterCrash.integrity).toBe("ok");
    const succeededBefore = afterCrash.steps.filter((s) => s.status === "succeeded").map((s) => s.key);
    // Never an effect without its intent: every call in the ledger has a row.
    for (const call of readLedger(file)) expect(afterCrash.steps.some((s) => s.key === call.step && s.attempt === call.attempt)).toBe(true);

    const second = await runWorker(file, "r", "continue");
    expect(second.report?.result, second.stderr + second.stdout).toMatchObject({ status: "completed", attempt: 2 });
    const after = inspectDb(file);
    expect(after.integrity).toBe("ok");

    const effects = readLedger(file).filter((e) => e.kind === "effect");
    // No succeeded step ever runs again.
    for (const key of succeededBefore) expect(effects.filter((e) => e.step === key && e.attempt === 2)).toEqual([]);
    const counts = Object.fromEntries(STEPS.map((key) => [key, effects.filter((e) => e.step === key).length]));
    expect(counts).toEqual(expectedCalls(point, step));
    // Re-drives keep the idempotency key.
    for (const e of effects) expect(e.idempotencyKey).toBe(`r:${e.step}`);
    // Exactly one succeeded row per step, and no row left intended.
    for (const key of STEPS) expect(after.steps.filter((s) => s.key === key && s.status === "succeeded")).toHaveLength(1);
    expect(after.steps.filter((s) => s.status === "intended")).toEqual([]);
    expect(after.runs).toEqual([{ id: "r", status: "completed", attempts: 2, budgetUsed: 1 }]);
  });
});
