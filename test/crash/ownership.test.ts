// Ownership with real processes: two continues racing for one run, and a frozen holder (a zombie).
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { readLedger, runWorker, spawnWorker } from "../helpers/worker.js";

describe("ownership across processes", () => {
  it("two processes continuing one run at the same moment: exactly one runs, the other gets RUN_BUSY", async () => {
    for (let round = 0; round < 4; round++) {
      const file = tmpDb();
      const crashed = await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "one" });
      expect(crashed.signal).toBe("SIGKILL");
      const barrier = path.join(path.dirname(file), "go");
      const env = { BARRIER_FILE: barrier, STEP_DELAY_MS: "150" };
      const a = spawnWorker(file, "r", "continue", env);
      const b = spawnWorker(file, "r", "continue", env);
      await Promise.all([a.ready, b.ready]);
      fs.writeFileSync(barrier, "");
      const outcomes = await Promise.all([a.done, b.done]);
      const completed = outcomes.filter((o) => o.report?.result?.status === "completed");
      const busy = outcomes.filter((o) => o.report?.refused?.code === "RUN_BUSY");
      expect(completed, JSON.stringify(outcomes.map((o) => o.report))).toHaveLength(1);
      expect(busy).toHaveLength(1);
      expect(busy[0]!.report!.refused!.message).toMatch(/held by attempt 2 \(host .+, pid \d+\): process \d+ on .+ is alive\./);
      // The loser ran nothing: every call after the crash came from the winner.
      const afterCrash = readLedger(file).filter((e) => e.attempt !== 1);
      expect(new Set(afterCrash.map((e) => e.pid)).size).toBe(1);
      const db = inspectDb(file);
      expect(db.integrity).toBe("ok");
      expect(db.attempts.map((x) => x.number)).toEqual([1, 2]);
      expect(db.leases).toEqual([{ runId: "r", epoch: 2, attempt: null }]);
    }
  });

  it("a zombie: the holder is frozen (SIGSTOP) past its lease, another process takes over, and every write the zombie tries after SIGCONT is refused", async () => {
    const file = tmpDb();
    // Step one takes 30 s unless its signal aborts it, so the zombie is frozen inside it however
    // late the SIGSTOP lands; after SIGCONT its refused lease renewal aborts it.
    const zombie = spawnWorker(file, "r", "start", { LEASE_MS: "300", STEP_DELAY_MS: "30000" });
    // Freeze it inside step one's effect (its intent is durable, its outcome is not).
    await waitFor(() => zombie.output().includes("entered one\n"), 20_000, 'the zombie never printed "entered one"');
    zombie.child.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, 700)); // past the 300 ms lease
    const taker = await runWorker(file, "r", "continue", { LEASE_MS: "300" });
    expect(taker.report?.result).toMatchObject({ status: "completed", attempt: 2 });
    zombie.child.kill("SIGCONT");
    const woke = await zombie.done;
    // Its result gives the run's status as the new holder left it, not "running".
    expect(woke.report?.result).toMatchObject({ status: "failed", runStatus: "completed", error: { code: "LEASE_LOST" } });

    const db = inspectDb(file);
    expect(db.integrity).toBe("ok");
    // Nothing attempt 1 wrote after the takeover: its step one row was settled by attempt 2, not succeeded.
    expect(db.steps.filter((s) => s.attempt === 1).map((s) => [s.key, s.status])).toEqual([["one", "failed"]]);
    for (const key of ["one", "two", "three"]) expect(db.steps.filter((s) => s.key === key && s.status === "succeeded")).toHaveLength(1);
    expect(db.runs[0]).toMatchObject({ status: "completed" });
    expect(db.attempts.map((a) => a.ending)).toEqual([null, "completed"]);
    // The zombie's own effect may still land when it wakes (before its renewal is refused and
    // its signal aborted) — at-least-once for an idempotent step, always with the same key.
    const ones = readLedger(file).filter((e) => e.kind === "effect" && e.step === "one");
    expect(ones.length).toBeGreaterThanOrEqual(1);
    expect(ones.length).toBeLessThanOrEqual(2);
    expect(new Set(ones.map((e) => e.idempotencyKey))).toEqual(new Set(["r:one"]));
    expect(readLedger(file).filter((e) => e.kind === "effect" && e.step === "two")).toHaveLength(1);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000, what = "waitFor timed out"): Promise<void> {
  const start = Date.now();
  const safe = () => {
    try {
      return check();
    } catch {
      return false; // the file may not have its schema yet
    }
  };
  while (!safe()) {
    if (Date.now() - start > timeoutMs) throw new Error(`${what} (within ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
