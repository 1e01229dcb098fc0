// Shared helpers for `npm run bench`: temp files, timing, medians, the steplog schema as
// steplog itself creates it, and the raw baselines on better-sqlite3 (and on node:sqlite, for
// the driver cases: the same hand-written log on that driver).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { randomFillSync } from "node:crypto";
import { createRequire } from "node:module";
import { ulid } from "ulid";
import { createEngine, defineWorkflow } from "steplog";
import { sqliteStore } from "steplog/sqlite";

/** Samples per case (median taken): 7, as issue 21 asks. BENCH_REPS=9 on a noisy machine. */
export const REPS = Math.max(1, Number(process.env.BENCH_REPS ?? 7) | 0);

// ---------------------------------------------------------------- temp files

let tmpRoot;
export function tmpDir() {
  tmpRoot ??= fs.mkdtempSync(path.join(os.tmpdir(), "steplog-bench-"));
  return tmpRoot;
}
let fileCounter = 0;
/** A fresh path for a database file (nothing is created). */
export function tmpFile(label) {
  return path.join(tmpDir(), `${label}-${++fileCounter}.db`);
}
export function removeDb(file) {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) fs.rmSync(file + suffix, { force: true });
}
export function cleanup() {
  if (tmpRoot) fs.rmSync(tmpRoot, { recursive: true, force: true });
  tmpRoot = undefined;
}

// ---------------------------------------------------------------- timing

export const now = () => performance.now();

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Time `baseline` and `library` REPS times each, alternating which goes first, so drift in
 * the machine hits both alike. Each function returns its elapsed ms (it times itself, so
 * setup stays out). Returns the raw samples and their medians.
 */
export async function interleave(baseline, library, reps = REPS) {
  const b = [];
  const l = [];
  for (let i = 0; i < reps; i++) {
    if (i % 2 === 0) {
      b.push(await baseline(i));
      l.push(await library(i));
    } else {
      l.push(await library(i));
      b.push(await baseline(i));
    }
  }
  return { baselineMs: b, steplogMs: l, baselineMedianMs: median(b), steplogMedianMs: median(l) };
}

export function gcIfAvailable() {
  if (typeof globalThis.gc === "function") {
    globalThis.gc();
    globalThis.gc();
  }
}

// ---------------------------------------------------------------- machine

export function machineInfo() {
  let sqliteVersion;
  const db = openRawOn(":memory:", rawDriverHere());
  try {
    sqliteVersion = db.prepare("SELECT sqlite_version() AS v").get().v;
  } finally {
    db.close();
  }
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model,
    totalMemMB: Math.round(os.totalmem() / 2 ** 20),
    loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
    tmpdir: os.tmpdir(),
    betterSqlite3: readVersion("better-sqlite3"),
    sqlite: sqliteVersion,
    steplog: readVersion("steplog"),
    date: new Date().toISOString(),
  };
}

function readVersion(pkg) {
  try {
    const url = new URL(import.meta.resolve(`${pkg}/package.json`));
    return JSON.parse(fs.readFileSync(url, "utf8")).version;
  } catch {
    try {
      return JSON.parse(fs.readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), "utf8")).version;
    } catch {
      return undefined;
    }
  }
}

// ---------------------------------------------------------------- schema

let schemaCache;
/**
 * The DDL of a store exactly as this build of steplog creates it: one run through steplog
 * into a throwaway file, then its sqlite_master. Baselines use the same tables and indexes.
 */
export async function steplogSchema() {
  if (schemaCache) return schemaCache;
  const file = tmpFile("schema");
  const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [] });
  const wf = defineWorkflow({ name: "bench-schema", run: async (ctx) => ctx.step("one", async () => 1) });
  await engine.start(wf, undefined);
  await engine.close();
  const db = openRawOn(file, rawDriverHere());
  const ddl = db
    .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY CASE type WHEN 'table' THEN 0 ELSE 1 END, rowid")
    .all()
    .map((r) => r.sql);
  const meta = db.prepare("SELECT key, value FROM meta").all();
  db.close();
  removeDb(file);
  schemaCache = { ddl, meta };
  return schemaCache;
}

/** Create `file` with steplog's schema (so steplog can open it too). Returns nothing; file closed. */
export async function createSchemaFile(file) {
  await writeSchemaFile(file, "");
}

/**
 * Create `file` for a raw baseline: steplog's tables, with the steps as steplog wrote them in
 * schema 9 — a unique (run_num, seq) index, no chunks, and the trigger that numbered a row
 * inserted without its run's number. That is the issue's baseline of two row writes a step;
 * steplog's later layouts write less than it (schema 10's chunks fewer index pages, schema 11
 * no trigger, which made each INSERT dearer), which is the point of them, so they are not
 * copied into the work they are measured against. Its meta says steplog's current schema
 * version: only raw code may open it.
 */
export async function createRawSchemaFile(file, driver = "better-sqlite3") {
  await writeSchemaFile(
    file,
    `DROP INDEX steps_unchunked; DROP INDEX steps_by_chunk; DROP TABLE step_chunks; ALTER TABLE steps DROP COLUMN chunk;
     CREATE UNIQUE INDEX steps_by_run ON steps (run_num, seq);
     CREATE TRIGGER steps_numbered AFTER INSERT ON steps WHEN NEW.run_num IS NULL
     BEGIN
       UPDATE steps SET run_num = (SELECT num FROM runs WHERE id = NEW.run_id) WHERE rowid = NEW.rowid;
     END;`,
    driver,
  );
}

async function writeSchemaFile(file, change, driver = "better-sqlite3") {
  const { ddl, meta } = await steplogSchema();
  // 0600 as steplog makes its own files (it warns about a store others can read).
  fs.closeSync(fs.openSync(file, "wx", 0o600));
  const db = openRawOn(file, driver);
  db.pragma("journal_mode = WAL");
  db.transaction(() => {
    for (const sql of ddl) db.exec(sql);
    const put = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    for (const { key, value } of meta) put.run(key, value);
    if (change) db.exec(change);
  })();
  db.close();
}

/** Open a raw connection the way steplog does: WAL, busy_timeout, synchronous set explicitly, a 2 MB page cache. */
export function openRaw(file, synchronous, driver = "better-sqlite3") {
  const db = openRawOn(file, driver);
  db.pragma("busy_timeout = 5000");
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma("cache_size = -2000");
  return db;
}

export const syncFor = (durability) => (durability === "power" ? "FULL" : "NORMAL");

// ---------------------------------------------------------------- raw drivers

/** The drivers a raw baseline can run on here (the driver cases run once on each). */
export function rawDriversHere() {
  return ["better-sqlite3", "node:sqlite"].filter((driver) => {
    try {
      openRawOn(":memory:", driver).close();
      return true;
    } catch {
      return false;
    }
  });
}
const rawDriverHere = () => rawDriversHere()[0];

/** A raw connection on `driver`, with the part of better-sqlite3's API the baselines use. */
export function openRawOn(file, driver) {
  if (driver === "better-sqlite3") return new Database(file);
  if (driver === "node:sqlite") return new NodeSqliteRaw(file);
  throw new Error(`no raw baseline on ${driver}`);
}

/**
 * Raw node:sqlite as a hand-written log would use it: prepared statements, and BEGIN IMMEDIATE
 * … COMMIT (a savepoint when nested) prepared once, in better-sqlite3's `transaction` shape so
 * the same baseline code runs on it.
 */
class NodeSqliteRaw {
  constructor(file) {
    const { DatabaseSync } = createRequire(import.meta.url)("node:sqlite");
    this.db = new DatabaseSync(file);
    const p = (sql) => this.db.prepare(sql);
    this.control = {
      begin: p("BEGIN"),
      immediate: p("BEGIN IMMEDIATE"),
      commit: p("COMMIT"),
      rollback: p("ROLLBACK"),
      savepoint: p('SAVEPOINT "raw nested"'),
      release: p('RELEASE "raw nested"'),
      undo: p('ROLLBACK TO "raw nested"'),
    };
  }
  prepare(sql) {
    return this.db.prepare(sql);
  }
  exec(sql) {
    this.db.exec(sql);
    return this;
  }
  pragma(text) {
    const statement = this.db.prepare(`PRAGMA ${text}`);
    statement.setReturnArrays(true);
    return statement.get()?.[0];
  }
  transaction(fn) {
    const { db, control: c } = this;
    const wrap = (begin) =>
      function (...args) {
        const nested = db.isTransaction;
        (nested ? c.savepoint : begin).run();
        try {
          const result = fn.apply(this, args);
          (nested ? c.release : c.commit).run();
          return result;
        } catch (error) {
          if (db.isTransaction) {
            if (nested) {
              c.undo.run();
              c.release.run();
            } else c.rollback.run();
          }
          throw error;
        }
      };
    return Object.assign(wrap(c.begin), { immediate: wrap(c.immediate) });
  }
  close() {
    this.db.close();
  }
}

// ---------------------------------------------------------------- raw step log

/**
 * A run id for a raw baseline, shaped like steplog's own (a 26-character ULID): the run id is in
 * every step row and its idempotency key, so a shorter one would make the baseline's rows smaller
 * than the rows it is compared with. Drawn as steplog draws its own, from a buffer of random
 * bytes filled once per 16 ids: the ulid package's default makes a crypto call a character,
 * ~40 µs an id here, which raw group commit would pay 100 times a sample and steplog does not.
 */
export const rawRunId = () => ulid(undefined, randomFraction);

const idBytes = new Uint8Array(256);
let nextIdByte = idBytes.length;
function randomFraction() {
  if (nextIdByte === idBytes.length) {
    randomFillSync(idBytes);
    nextIdByte = 0;
  }
  return idBytes[nextIdByte++] / 256;
}

// A hand-written log knows its run's number (steplog looks it up in each statement).
const STEP_INSERT = `INSERT INTO steps (run_num, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
  VALUES (?, ?, ?, 1, ?, ?, 'intended', 'idempotent', ?, NULL, NULL, NULL, ?, NULL, 0, NULL, NULL)`;
const STEP_OUTCOME = `UPDATE steps SET status = 'succeeded', value = ?, error = NULL, ended_at = ?, calls = 1, resolution = NULL, usage = NULL
  WHERE run_num = ? AND seq = ? AND status = 'intended'`;

/**
 * A hand-written durable step log on raw better-sqlite3, the floor steplog is measured
 * against: prepared statements, one BEGIN IMMEDIATE transaction per step holding the outcome
 * of step n and the intent of step n+1 (the intent is committed before the function runs),
 * the same rows steplog writes (run, attempt, lease, one steps row per step).
 */
export class RawStepLog {
  constructor(db) {
    this.db = db;
    this.insertRun = db.prepare(
      `INSERT INTO runs (id, workflow, version, args, status, attempts, budget_used, source, deadline, value, error, created_at, updated_at, num)
       VALUES (?, ?, NULL, ?, 'running', 1, 1, NULL, NULL, NULL, NULL, ?, ?, (SELECT coalesce(max(num), 0) + 1 FROM runs))
       RETURNING num`,
    );
    this.insertAttempt = db.prepare(
      `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error)
       VALUES (?, 1, ?, NULL, ?, NULL, ?, NULL, NULL, NULL, 0, NULL)`,
    );
    this.insertLease = db.prepare(`INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (?, 1, 1, ?, ?)`);
    this.insertStep = db.prepare(STEP_INSERT);
    this.updateOutcome = db.prepare(STEP_OUTCOME);
    this.endAttempt = db.prepare(`UPDATE attempts SET ending = 'completed', ended_at = ? WHERE run_id = ? AND number = 1`);
    this.endRun = db.prepare(`UPDATE runs SET status = 'completed', value = ?, budget_used = 0, updated_at = ? WHERE id = ?`);
    this.releaseLease = db.prepare(`UPDATE leases SET attempt = NULL, expires_at = 0, heartbeat_at = ? WHERE run_id = ?`);
    // Built once: better-sqlite3's transaction wrapper.
    this.stepTxn = db.transaction((runId, num, prevSeq, prevValue, seq, key, name, t) => {
      if (prevSeq > 0 && this.updateOutcome.run(prevValue, t, num, prevSeq).changes !== 1) throw new Error("no open intent");
      this.insertStep.run(num, runId, seq, key, name, `${runId}:${key}`, t);
    });
    /** Returns the run's number. */
    this.startTxn = db.transaction((runId, workflow, args, t) => {
      const { num } = this.insertRun.get(runId, workflow, args, t, t);
      this.insertAttempt.run(runId, HOST, process.pid, t);
      this.insertLease.run(runId, t + 30_000, t);
      return num;
    });
    this.endTxn = db.transaction((runId, num, prevSeq, prevValue, result, t) => {
      if (prevSeq > 0) this.updateOutcome.run(prevValue, t, num, prevSeq);
      this.endAttempt.run(t, runId);
      this.endRun.run(result, t, runId);
      this.releaseLease.run(t, runId);
    });
  }

  /** One run of `n` sequential steps named `name` (keys name, name#2, …), each an async no-op. */
  async run(runId, n, name = "noop") {
    const num = this.startTxn.immediate(runId, "bench-seq", JSON.stringify(n), Date.now());
    let prevSeq = 0;
    let prevValue = null;
    for (let i = 1; i <= n; i++) {
      const key = i === 1 ? name : `${name}#${i}`;
      this.stepTxn.immediate(runId, num, prevSeq, prevValue, i, key, name, Date.now());
      const value = await noopStep(i);
      prevValue = JSON.stringify(value);
      prevSeq = i;
    }
    this.endTxn.immediate(runId, num, prevSeq, prevValue, JSON.stringify(n), Date.now());
  }
}

const HOST = os.hostname();
const noopStep = async (i) => ({ ok: true, i });

/** Raw group commit: `runs` runs advanced in lockstep, one transaction per round for all of them. */
export function rawGroupCommit(db, runs, steps) {
  const log = new RawStepLog(db);
  const ids = Array.from({ length: runs }, rawRunId);
  const t0 = Date.now();
  const nums = db.transaction(() => ids.map((id) => log.startTxn(id, "bench-conc", "100", t0))).immediate();
  const round = db.transaction((i, t) => {
    for (let r = 0; r < ids.length; r++) {
      const id = ids[r];
      if (i > 1) log.updateOutcome.run(JSON.stringify({ ok: true, i: i - 1 }), t, nums[r], i - 1);
      const key = i === 1 ? "noop" : `noop#${i}`;
      log.insertStep.run(nums[r], id, i, key, "noop", `${id}:${key}`, t);
    }
  });
  for (let i = 1; i <= steps; i++) round.immediate(i, Date.now());
  db.transaction(() => {
    for (let r = 0; r < ids.length; r++) log.endTxn(ids[r], nums[r], steps, JSON.stringify({ ok: true, i: steps }), "100", Date.now());
  }).immediate();
}

// ---------------------------------------------------------------- steplog side

/** A workflow of `n` sequential no-op steps named "noop", each returning { ok: true, i }. */
export const seqWorkflow = defineWorkflow({
  name: "bench-seq",
  async run(ctx, n) {
    for (let i = 1; i <= n; i++) await ctx.step("noop", async () => ({ ok: true, i }));
    return n;
  },
});

/** Case 1 with an input on every step (what a tool call's arguments look like): its cost against seqWorkflow. */
export const seqInputWorkflow = defineWorkflow({
  name: "bench-seq-input",
  async run(ctx, n) {
    for (let i = 1; i <= n; i++) await ctx.step("noop", { input: { user: "u-1042", item: i } }, async () => ({ ok: true, i }));
    return n;
  },
});

/** Case 6's raw Postgres step table: steplog's step columns without its audit trail. */
export const rawPgTable = (table) => `CREATE TABLE ${table} (
  run_id text NOT NULL, seq integer NOT NULL, attempt integer NOT NULL, key text NOT NULL, name text NOT NULL,
  status text NOT NULL, effect text NOT NULL, idempotency_key text NOT NULL, value text, error text, version text,
  intended_at bigint NOT NULL, ended_at bigint, calls integer NOT NULL, resolution text, usage text,
  PRIMARY KEY (run_id, seq))`;

/**
 * Case 6's raw Postgres step, one statement: the outcome UPDATE of step $2 and the intent INSERT
 * of step $5 in one data-modifying CTE. Values: run id, previous seq, previous value, now, seq,
 * key, idempotency key.
 */
export const rawPgStep = (table) => `WITH outcome AS (
    UPDATE ${table} SET status = 'succeeded', value = $3, ended_at = $4, calls = 1 WHERE run_id = $1 AND seq = $2 AND status = 'intended'
  )
  INSERT INTO ${table} (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
  VALUES ($1, $5, 1, $6, 'noop', 'intended', 'idempotent', $7, NULL, NULL, NULL, $4, NULL, 0, NULL, NULL)`;

export function expectStatus(result, status, what) {
  if (result.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${result.status}: ${JSON.stringify(result.error)}`);
  }
  return result;
}

export { createEngine, defineWorkflow, sqliteStore, Database };
