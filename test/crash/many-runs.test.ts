// Group commit under kill -9: one process runs 40 runs at once, their intents and outcomes
// sharing commits, and is SIGKILLed part-way. No effect may exist without its committed
// intent; no step recorded succeeded may run again; a continue finishes every run.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { Database } from "../helpers/sqlite-driver.js";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { tmpDb } from "../helpers/tmp.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/many-runs.mjs", import.meta.url));
const RUNS = 40;

/** Run the fixture; with `killAfterEffects`, SIGKILL it once it has printed that many effects. */
async function runFixture(file: string, mode: "start" | "continue", killAfterEffects?: number, runs = RUNS, steps = 5) {
  const { done } = spawnNode(FIXTURE, [file, String(runs), mode, String(steps)], {
    env: { STEPLOG_FAULT: "" },
    onStdout: (stdout, child) => {
      const effects = stdout.split("effect\n").length - 1;
      if (killAfterEffects !== undefined && effects >= killAfterEffects && child.exitCode === null) child.kill("SIGKILL");
    },
  });
  const { signal, report, stderr } = await done;
  return { signal, statuses: report?.statuses as string[] | undefined, stderr };
}

interface Effect {
  runId: string;
  step: string;
  idempotencyKey: string;
  attempt: number;
}
const ledger = (file: string): Effect[] =>
  fs
    .readFileSync(`${file}.ledger`, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Effect);

function stepRows(file: string) {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    return db.prepare("SELECT run_id AS runId, key, status, attempt, idempotency_key AS idempotencyKey FROM steps ORDER BY run_id, seq").all() as Array<{
      runId: string;
      key: string;
      status: string;
      attempt: number;
      idempotencyKey: string;
    }>;
  } finally {
    db.close();
  }
}

describe("group commit under kill -9: 40 runs in one process", () => {
  it("every effect has its committed intent; no succeeded step runs again; a continue finishes every run", async () => {
    const file = tmpDb();
    // Part-way: some runs have finished steps, others are inside one.
    const first = await runFixture(file, "start", 70);
    expect(first.signal).toBe("SIGKILL");
    const before = ledger(file);
    expect(before.length).toBeGreaterThanOrEqual(70);
    expect(before.length).toBeLessThan(RUNS * 5);

    const rows = stepRows(file);
    // No effect without an intent: every call the ledger saw has its row, from that attempt, with its key.
    for (const effect of before) {
      const row = rows.find((r) => r.runId === effect.runId && r.key === effect.step && r.attempt === effect.attempt);
      expect(row, `${effect.runId} ${effect.step}`).toBeDefined();
      expect(row!.idempotencyKey).toBe(effect.idempotencyKey);
    }
    const succeededBefore = new Set(rows.filter((r) => r.status === "succeeded").map((r) => `${r.runId} ${r.key}`));

    const second = await runFixture(file, "continue");
    expect(second.signal, second.stderr).toBeNull();
    expect(second.statuses).toEqual(Array(RUNS).fill("completed"));

    const after = ledger(file).slice(before.length);
    for (const effect of after) {
      expect(succeededBefore.has(`${effect.runId} ${effect.step}`), `${effect.runId} ${effect.step} ran again`).toBe(false);
      // A step cut off inside its effect is re-driven with the same key.
      const earlier = before.find((e) => e.runId === effect.runId && e.step === effect.step);
      if (earlier) expect(effect.idempotencyKey).toBe(earlier.idempotencyKey);
    }
    // Every step of every run ran, at most twice (once cut off, once re-driven).
    for (let r = 0; r < RUNS; r++) {
      for (let i = 1; i <= 5; i++) {
        const calls = ledger(file).filter((e) => e.runId === `m-${r}` && e.step === `s${i}`).length;
        expect(calls, `m-${r} s${i}`).toBeGreaterThanOrEqual(1);
        expect(calls, `m-${r} s${i}`).toBeLessThanOrEqual(2);
      }
    }
  });
});

describe("group commit under kill -9: runs long enough to write several chunks, killed twice", () => {
  it("every effect has its committed intent; no succeeded step runs again, across chunks and attempts; the third attempt finishes every run", async () => {
    // 20 runs × 40 steps: each run's steps span three chunks of 16 (schema 10), and each
    // continue starts a chunk of its own. Killed in the first attempt and in the second.
    const runs = 20;
    const steps = 40;
    const file = tmpDb();
    const first = await runFixture(file, "start", 500, runs, steps);
    expect(first.signal).toBe("SIGKILL");
    const second = await runFixture(file, "continue", 150, runs, steps);
    expect(second.signal).toBe("SIGKILL");

    const effects = ledger(file);
    expect(new Set(effects.map((e) => `${e.runId} ${e.step}`)).size).toBeLessThan(runs * steps);
    const rows = stepRows(file);
    for (const effect of effects) {
      const row = rows.find((r) => r.runId === effect.runId && r.key === effect.step && r.attempt === effect.attempt);
      expect(row, `${effect.runId} ${effect.step} attempt ${effect.attempt}`).toBeDefined();
    }
    // Some attempt wrote more than one chunk of a run (it went past 16 steps), and every chunk is listed for its run.
    const db = new Database(file, { readonly: true });
    const rolledOver = db.prepare("SELECT count(*) AS n FROM (SELECT 1 FROM steps GROUP BY run_id, attempt HAVING count(DISTINCT chunk) > 1)").get() as {
      n: number;
    };
    expect(rolledOver.n).toBeGreaterThan(0);
    const chunks = db
      .prepare(
        `SELECT s.run_id AS runId, count(DISTINCT s.chunk) AS n, sum(c.run_num IS NULL) AS unlisted
         FROM steps s LEFT JOIN step_chunks c ON c.chunk = s.chunk AND c.run_num = s.run_num GROUP BY s.run_id`,
      )
      .all() as Array<{ runId: string; n: number; unlisted: number }>;
    db.close();
    expect(chunks.some((c) => c.n > 1)).toBe(true);
    expect(chunks.filter((c) => c.unlisted > 0)).toEqual([]);
    const succeededBefore = new Set(rows.filter((r) => r.status === "succeeded").map((r) => `${r.runId} ${r.key}`));

    const third = await runFixture(file, "continue", undefined, runs, steps);
    expect(third.signal, third.stderr).toBeNull();
    expect(third.statuses).toEqual(Array(runs).fill("completed"));
    for (const effect of ledger(file).slice(effects.length)) {
      expect(succeededBefore.has(`${effect.runId} ${effect.step}`), `${effect.runId} ${effect.step} ran again`).toBe(false);
    }
    // Every step of every run ran, at most once per attempt that reached it.
    const all = ledger(file);
    for (let r = 0; r < runs; r++) {
      for (let i = 1; i <= steps; i++) {
        const calls = all.filter((e) => e.runId === `m-${r}` && e.step === `s${i}`).length;
        expect(calls, `m-${r} s${i}`).toBeGreaterThanOrEqual(1);
        expect(calls, `m-${r} s${i}`).toBeLessThanOrEqual(3);
      }
    }
  });
});
