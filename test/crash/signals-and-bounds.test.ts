// Graceful ends (SIGINT/SIGTERM with handleSignals), a second Ctrl-C, and poison runs that
// crash on every attempt until they are dead-lettered. Real processes throughout.
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb } from "../helpers/tmp.js";
import { inspectDb } from "../helpers/inspect.js";
import { readLedger, runWorker, spawnWorker } from "../helpers/worker.js";

const crashThree = defineWorkflow({ name: "crash-three", async run() {} });

/** Resolves once the child has printed `text` on the given stream (all of it so far, not one chunk). */
function untilOutput(run: ReturnType<typeof spawnWorker>, text: string, stream: "stdout" | "stderr" = "stdout", limitMs = 20_000): Promise<void> {
  const pipe = run.child[stream]!;
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => {
      pipe.off("data", check);
      reject(new Error(`the worker did not print ${JSON.stringify(text)} on ${stream} within ${limitMs} ms; it printed:\n${run.output()}`));
    }, limitMs);
    const check = (chunk: Buffer | string) => {
      seen += chunk.toString();
      if (seen.includes(text)) {
        clearTimeout(timer);
        pipe.off("data", check);
        resolve();
      }
    };
    pipe.on("data", check);
  });
}

describe("graceful ends", () => {
  it.each(["SIGINT", "SIGTERM"] as const)(
    "%s once: the attempt ends cancelled, the open step recorded failed, the lease released; an immediate continue works",
    async (signal) => {
      const file = tmpDb();
      const worker = spawnWorker(file, "r", "start", { HANDLE_SIGNALS: "1", STEP_DELAY_MS: "5000" });
      await untilOutput(worker, "entered one");
      worker.child.kill(signal);
      const ended = await worker.done;
      expect(ended.code).toBe(0);
      expect(ended.report?.result).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED", step: "one" } });
      expect(ended.report!.result!.error.message).toContain(`received ${signal}`);
      const db = inspectDb(file);
      expect(db.steps.map((s) => [s.key, s.status])).toEqual([["one", "failed"]]);
      expect(db.leases).toEqual([{ runId: "r", epoch: 1, attempt: null }]);
      const next = await runWorker(file, "r", "continue", { STEP_DELAY_MS: "0" });
      expect(next.report?.result).toMatchObject({ status: "completed", attempt: 2 });
    },
  );

  it("SIGTERM while a step ignores its signal: the value it returns anyway is recorded succeeded (its effect happened), and a continue reuses it", async () => {
    const file = tmpDb();
    const env = { EFFECTS: JSON.stringify({ one: "irreversible" }) };
    // The step does not throw when its signal aborts: it returns its value then, as one that
    // noticed too late to stop would (it runs until the SIGTERM, however late that comes).
    const worker = spawnWorker(file, "r", "start", { ...env, HANDLE_SIGNALS: "1", STEP_DELAY_MS: "20000", IGNORE_ABORT: "1", RETURN_ON_ABORT: "1" });
    await untilOutput(worker, "entered one");
    worker.child.kill("SIGTERM");
    const ended = await worker.done;
    expect(ended.report?.result).toMatchObject({ status: "cancelled", error: { code: "RUN_CANCELLED", step: "one" } });
    expect(inspectDb(file).steps.map((s) => [s.key, s.status])).toEqual([["one", "succeeded"]]);
    const next = await runWorker(file, "r", "continue", env);
    expect(next.report?.result).toMatchObject({ status: "completed", value: ["one done in attempt 1", "two done in attempt 2", "three done in attempt 2"] });
    expect(readLedger(file).filter((e) => e.kind === "effect" && e.step === "one")).toHaveLength(1);
  });

  it("a second SIGINT before the attempt has ended exits at once: a crash, and the run reads interrupted", async () => {
    const file = tmpDb();
    // The step ignores its signal, so the clean cancel after the first Ctrl-C cannot finish.
    const worker = spawnWorker(file, "r", "start", { HANDLE_SIGNALS: "1", STEP_DELAY_MS: "60000", IGNORE_ABORT: "1" });
    await untilOutput(worker, "entered one");
    worker.child.kill("SIGINT");
    // The second only once the first was handled (two sent close together can merge into one).
    await untilOutput(worker, "cancelling the running attempt(s) cleanly; press Ctrl-C again", "stderr");
    const sentAt = Date.now();
    worker.child.kill("SIGINT");
    const ended = await worker.done;
    expect(ended.code, ended.stdout + ended.stderr).toBe(130);
    // At once: long before the 60 s step could have ended.
    expect(Date.now() - sentAt).toBeLessThan(15_000);
    expect(ended.stderr).toContain("second interrupt");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [crashThree] });
    const view = await engine.get("r");
    expect(view.status).toBe("interrupted");
    expect(view.steps.map((s) => [s.key, s.status])).toEqual([["one", "intended"]]);
    await engine.close();
  });
});

describe("bounds", () => {
  it("a run that crashes on every attempt is dead-lettered at the claim after its last allowed attempt; force gives a fresh budget", async () => {
    const file = tmpDb();
    const env = { MAX_ATTEMPTS: "3", CRASH_IN_EFFECT: "two" };
    expect((await runWorker(file, "r", "start", env)).signal).toBe("SIGKILL");
    expect((await runWorker(file, "r", "continue", env)).signal).toBe("SIGKILL");
    expect((await runWorker(file, "r", "continue", env)).signal).toBe("SIGKILL");
    const refused = await runWorker(file, "r", "continue", env);
    expect(refused.report?.refused?.code).toBe("DEAD_LETTERED");
    expect(refused.report?.refused?.message).toMatch(/3 attempts ended without completing \(the workflow allows 3\).*\{ force: true \}/);
    expect(inspectDb(file).runs[0]).toMatchObject({ status: "dead-lettered", attempts: 3 });
    // A refused continue counts no attempt and runs nothing.
    expect(readLedger(file).filter((e) => e.kind === "effect" && e.step === "two")).toHaveLength(3);

    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [crashThree] });
    expect((await engine.list({ status: "dead-lettered" })).map((r) => r.id)).toEqual(["r"]);
    await engine.close();

    const forced = await runWorker(file, "r", "continue", { MAX_ATTEMPTS: "3" }, { force: true });
    expect(forced.report?.result).toMatchObject({ status: "completed", attempt: 4 });
    const db = inspectDb(file);
    expect(db.attempts.map((a) => a.forced)).toEqual([0, 0, 0, 1]);
    expect(db.runs[0]).toMatchObject({ status: "completed", budgetUsed: 0 });
  });
});
