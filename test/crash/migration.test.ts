// Upgrading a store's schema is one transaction: a process SIGKILLed in the middle of it leaves
// the store as it was, and the next open upgrades it with every record kept. The store here is
// written the way steplog's schema version 3 wrote it (steps clustered on the run id), with a
// run cut off inside its second step among many finished runs.
import crypto from "node:crypto";
import os from "node:os";
import { Database } from "../helpers/sqlite-driver.js";
import { describe, expect, it } from "vitest";
import { SCHEMA_VERSION } from "../../src/store/sqlite/schema.js";
import { tmpDb } from "../helpers/tmp.js";
import { createVersion3Store } from "../helpers/version3-store.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const FILLER_RUNS = 300;
const FILLER_STEPS = 40;

/** FILLER_RUNS completed runs, and run "r" of the crash worker's workflow cut off inside "two". */
function fillVersion3Store(db: Database): void {
  const run = db.prepare(
    `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, created_at, updated_at) VALUES (?, ?, NULL, '{"$type":"undefined"}', ?, 1, 1, ?, ?)`,
  );
  const attempt = db.prepare(
    `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error)
     VALUES (?, 1, ?, NULL, 999999999, NULL, ?, ?, ?, NULL, 0, NULL)`,
  );
  const lease = db.prepare("INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (?, 1, ?, 0, ?)");
  const step = db.prepare(
    `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
     VALUES (?, ?, 1, ?, ?, ?, 'idempotent', ?, ?, NULL, NULL, ?, ?, ?, NULL, NULL)`,
  );
  const t0 = Date.now() - 3_600_000;
  for (let r = 0; r < FILLER_RUNS; r++) {
    const id = `filler-${String(r).padStart(4, "0")}`;
    run.run(id, "old-job", "completed", t0 + r, t0 + r + 1);
    attempt.run(id, os.hostname(), t0 + r, t0 + r + 1, "completed");
    lease.run(id, null, t0 + r + 1);
    for (let s = 1; s <= FILLER_STEPS; s++) {
      const key = s === 1 ? "s" : `s#${s}`;
      step.run(id, s, key, "s", "succeeded", `${id}:${key}`, JSON.stringify({ r, s }), t0 + r, t0 + r, 1);
    }
  }
  const t1 = t0 + FILLER_RUNS + 10;
  run.run("r", "crash-three", "running", t1, t1);
  attempt.run("r", os.hostname(), t1, null, null);
  lease.run("r", 1, t1);
  step.run("r", 1, "one", "one", "succeeded", "r:one", JSON.stringify("one done in attempt 1"), t1, t1, 1);
  step.run("r", 2, "two", "two", "intended", "r:two", null, t1, null, 0);
}

/** Every step record as text, in (run, seq) order: what must survive the upgrade unchanged. */
function stepRecords(file: string, runs: "fillers" | "all" = "all"): string {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, intended_at, ended_at, calls FROM steps
         ${runs === "fillers" ? "WHERE run_id LIKE 'filler-%'" : ""} ORDER BY run_id, seq`,
      )
      .all();
    return crypto.createHash("sha256").update(JSON.stringify(rows)).digest("hex") + ` (${rows.length} rows)`;
  } finally {
    db.close();
  }
}

function schemaVersion(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string }).value;
  } finally {
    db.close();
  }
}

describe("a schema upgrade cut off by SIGKILL", () => {
  it("leaves the version-3 store as it was; the next open upgrades it and the cut-off run goes on", async () => {
    const file = tmpDb();
    createVersion3Store(file, fillVersion3Store);
    const before = stepRecords(file);
    expect(before).toContain(`(${FILLER_RUNS * FILLER_STEPS + 2} rows)`);

    const killed = await runWorker(file, "r", "continue", { STEPLOG_FAULT: "during-migration" });
    expect(killed.signal).toBe("SIGKILL");
    expect(killed.report).toBeUndefined();
    expect(schemaVersion(file)).toBe("3");
    expect(stepRecords(file)).toBe(before);
    expect(readLedger(file)).toEqual([]);

    const fillersBefore = stepRecords(file, "fillers");
    const second = await runWorker(file, "r", "continue");
    expect(second.report?.result).toMatchObject({ status: "completed" });
    expect(schemaVersion(file)).toBe(String(SCHEMA_VERSION));
    // "one" was reused; "two", cut off inside its effect, was re-driven with its same key; "three" ran once.
    expect(readLedger(file).map((e) => [e.kind, e.step, e.idempotencyKey])).toEqual([
      ["effect", "two", "r:two"],
      ["effect", "three", "r:three"],
    ]);
    expect(stepRecords(file, "fillers")).toBe(fillersBefore);
    const db = new Database(file, { readonly: true });
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    // Run numbers follow creation order: the cut-off run was made last.
    expect(db.prepare("SELECT num FROM runs WHERE id = 'r'").get()).toEqual({ num: FILLER_RUNS + 1 });
    db.close();
  });
});
