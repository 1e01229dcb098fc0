// Where case 1's time goes (not part of `npm run bench`):
//
//   node bench/profile.mjs count [power|process]     SQL statements, transactions and prepares per step
//   node bench/profile.mjs split [power|process]     time split: in SQLite (BEGIN..COMMIT) vs in JS, steplog vs raw
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile.mjs cpu [process]    steplog only, for a CPU profile
//   node bench/profile.mjs top /tmp/prof/x.cpuprofile                           self and total time by function
//
// Build first (npm run build).

import fs from "node:fs";
import {
  Database,
  RawStepLog,
  cleanup,
  createEngine,
  createSchemaFile,
  expectStatus,
  now,
  openRaw,
  seqWorkflow,
  sqliteStore,
  syncFor,
  tmpFile,
} from "./lib.mjs";

const [mode = "count", arg = "process"] = process.argv.slice(2);
process.on("exit", cleanup);
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    cleanup();
    process.exit(130);
  });
}

const N = 2000;

async function steplogRun(durability, runs = 1, n = N) {
  const engine = createEngine({ store: sqliteStore({ path: tmpFile("prof"), durability }), workflows: [seqWorkflow] });
  expectStatus(await engine.start(seqWorkflow, 200), "completed", "warm-up");
  return {
    engine,
    async go() {
      for (let i = 0; i < runs; i++) expectStatus(await engine.start(seqWorkflow, n), "completed", "profile");
    },
  };
}

/** Wrap better-sqlite3's prototypes to count what runs. */
function instrument() {
  const probe = new Database(":memory:");
  const Statement = probe.prepare("SELECT 1").constructor;
  probe.close();
  const counts = { prepare: 0, transactionWrappers: 0, byStatement: new Map() };
  const bump = (sql, how) => {
    const key = `${how} ${sql.replace(/\s+/g, " ").slice(0, 70)}`;
    counts.byStatement.set(key, (counts.byStatement.get(key) ?? 0) + 1);
  };
  const dbProto = Database.prototype;
  const origPrepare = dbProto.prepare;
  dbProto.prepare = function (sql) {
    counts.prepare++;
    return origPrepare.call(this, sql);
  };
  const origTransaction = dbProto.transaction;
  dbProto.transaction = function (fn) {
    counts.transactionWrappers++;
    return origTransaction.call(this, fn);
  };
  for (const how of ["run", "get", "all"]) {
    const orig = Statement.prototype[how];
    Statement.prototype[how] = function (...args) {
      bump(this.source, how);
      return orig.apply(this, args);
    };
  }
  // BEGIN/COMMIT issued by the transaction wrapper do not go through Statement; count them.
  const origExec = dbProto.exec;
  dbProto.exec = function (sql) {
    bump(sql, "exec");
    return origExec.call(this, sql);
  };
  return counts;
}

function report(label, counts, steps) {
  console.log(`\n${label}: per step (${steps} steps)`);
  console.log(`  db.prepare() calls: ${(counts.prepare / steps).toFixed(3)}   db.transaction() wrappers built: ${(counts.transactionWrappers / steps).toFixed(3)}`);
  for (const [k, v] of [...counts.byStatement].sort((a, b) => b[1] - a[1])) console.log(`  ${(v / steps).toFixed(3)}  ${k}`);
}

if (mode === "count") {
  const durability = arg;
  const file = tmpFile("count-raw");
  await createSchemaFile(file);
  const raw = openRaw(file, syncFor(durability));
  const log = new RawStepLog(raw);
  const lib = await steplogRun(durability);
  await log.run("warm", 10);
  let counts = instrument();
  await log.run("raw", N);
  report("raw", counts, N);
  counts.prepare = counts.transactionWrappers = 0;
  counts.byStatement.clear();
  await lib.go();
  report("steplog", counts, N);
  raw.close();
  await lib.engine.close();
} else if (mode === "split") {
  // Time inside SQLite (the transaction function: BEGIN..COMMIT, fsync included) vs the rest.
  const durability = arg;
  // better-sqlite3 runs BEGIN and COMMIT as statements: time from BEGIN's start to COMMIT's end.
  const probe = new Database(":memory:");
  const Statement = probe.prepare("SELECT 1").constructor;
  probe.close();
  let inTxn = 0;
  let inCommit = 0;
  let begun = 0;
  const origRun = Statement.prototype.run;
  Statement.prototype.run = function (...args) {
    const src = this.source;
    if (src.startsWith("BEGIN")) begun = now();
    const isCommit = src === "COMMIT";
    const t = isCommit ? now() : 0;
    const result = origRun.apply(this, args);
    if (isCommit) {
      const end = now();
      inCommit += end - t;
      inTxn += end - begun;
    }
    return result;
  };
  const file = tmpFile("split-raw");
  await createSchemaFile(file);
  const raw = openRaw(file, syncFor(durability));
  const log = new RawStepLog(raw);
  const lib = await steplogRun(durability, 1);
  await log.run("warm", 200);
  const rows = [];
  for (let rep = 0; rep < 5; rep++) {
    for (const [label, fn] of [
      ["raw", () => log.run(`raw-${rep}`, N)],
      ["steplog", () => lib.go()],
    ]) {
      inTxn = 0;
      inCommit = 0;
      const t = now();
      await fn();
      const total = now() - t;
      rows.push({ label, total, inTxn, inCommit });
    }
  }
  const us = (ms) => ((ms * 1000) / N).toFixed(1);
  for (const label of ["raw", "steplog"]) {
    const mine = rows.filter((r) => r.label === label).sort((a, b) => a.total - b.total);
    const m = mine[2];
    console.log(
      `${label.padEnd(8)} total ${us(m.total)} µs/step = BEGIN..COMMIT ${us(m.inTxn)} (COMMIT alone ${us(m.inCommit)}) + outside transactions ${us(m.total - m.inTxn)}`,
    );
  }
  raw.close();
  await lib.engine.close();
} else if (mode === "cpu") {
  const lib = await steplogRun(arg, 10);
  const t = now();
  await lib.go();
  console.log(`steplog ${((now() - t) * 1000 / (10 * N)).toFixed(1)} µs/step`);
  await lib.engine.close();
} else if (mode === "top") {
  const profile = JSON.parse(fs.readFileSync(arg, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const name = (n) => {
    const f = n.callFrame;
    const file = f.url ? f.url.split("/").slice(-1)[0] : "";
    return `${f.functionName || "(anonymous)"} ${file}${f.url ? `:${f.lineNumber + 1}` : ""}`;
  };
  const self = new Map();
  const total = new Map();
  let all = 0;
  for (const [id, t] of dt) {
    all += t;
    const n = byId.get(id);
    self.set(name(n), (self.get(name(n)) ?? 0) + t);
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const nm = name(byId.get(cur));
      if (seen.has(nm)) continue;
      seen.add(nm);
      total.set(nm, (total.get(nm) ?? 0) + t);
    }
  }
  const pct = (t) => ((100 * t) / all).toFixed(1).padStart(5) + "%";
  console.log(`samples ${(all / 1000).toFixed(0)} ms\n-- self --`);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(pct(v), k);
  console.log("-- total (inclusive) --");
  for (const [k, v] of [...total].sort((a, b) => b[1] - a[1]).slice(0, 60)) console.log(pct(v), k);
}

if (mode === "micro") {
  // What single pieces of steplog's per-step work cost on this machine, in µs, at NORMAL.
  const file = tmpFile("micro");
  await createSchemaFile(file);
  const db = openRaw(file, "NORMAL");
  const log = new RawStepLog(db);
  await log.run("seed", 10);
  const M = 20000;
  // CPU time (user + system) of this process: less disturbed by other processes than wall time.
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const time = async (label, fn) => {
    for (let i = 0; i < 2000; i++) await fn(i);
    const samples = [];
    for (let r = 0; r < 5; r++) {
      const t = cpu();
      for (let i = 0; i < M; i++) await fn(i);
      samples.push(((cpu() - t) * 1000) / M);
    }
    samples.sort((a, b) => a - b);
    console.log(`${samples[2].toFixed(2).padStart(7)} µs  ${label}`);
  };
  const timeSync = (label, fn, m = M, per = 1) => {
    for (let i = 0; i < m / 10; i++) fn(i);
    const samples = [];
    for (let r = 0; r < 5; r++) {
      const t = cpu();
      for (let i = 0; i < m; i++) fn(i);
      samples.push(((cpu() - t) * 1000) / (m * per));
    }
    samples.sort((a, b) => a - b);
    console.log(`${samples[2].toFixed(2).padStart(7)} µs  ${label}`);
  };
  const noop = () => {};
  timeSync("db.transaction(fn) wrapper built (steplog: once per flush)", () => db.transaction(noop));
  const built = db.transaction(noop);
  timeSync("BEGIN IMMEDIATE + COMMIT, empty, NORMAL (wrapper reused)", () => built.immediate());
  const fence = db.prepare("SELECT epoch, attempt FROM leases WHERE run_id = ?");
  timeSync("fence SELECT (steplog: 2 per step)", () => fence.get("seed"));
  const named = db.prepare(
    `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
     VALUES (@runId, @seq, @attempt, @key, @name, @status, @effect, @idempotencyKey, @value, @error, @version, @intendedAt, @endedAt, @calls, @resolution, @usage)`,
  );
  const positional = db.prepare(
    `INSERT INTO steps (run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const del = db.prepare("DELETE FROM steps WHERE run_id = 'micro'");
  const updNamed = db.prepare(
    `UPDATE steps SET status = @status, value = @value, error = @error, ended_at = @endedAt, calls = @calls, resolution = @resolution, usage = @usage
     WHERE run_id = @runId AND seq = @seq AND status = 'intended'`,
  );
  const updPos = db.prepare(
    `UPDATE steps SET status = ?, value = ?, error = ?, ended_at = ?, calls = ?, resolution = ?, usage = ? WHERE run_id = ? AND seq = ? AND status = 'intended'`,
  );
  let seq = 0;
  const txn = db.transaction((f) => {
    for (let i = 0; i < 100; i++) f(++seq);
  });
  const row = (s) => ({ runId: "micro", seq: s, attempt: 1, key: `noop#${s}`, name: "noop", status: "intended", effect: "idempotent", idempotencyKey: `micro:noop#${s}`, value: null, error: null, version: null, intendedAt: 1, endedAt: null, calls: 0, resolution: null, usage: null });
  const per100 = (label, f) => {
    del.run();
    seq = 0;
    timeSync(label + " (100 per transaction, cost of one)", () => {
      if (seq > 50000) {
        del.run();
        seq = 0;
      }
      txn(f);
    }, 200, 100);
  };
  per100("INSERT intent, named params from a row object", (s) => named.run(row(s)));
  per100("INSERT intent, positional params", (s) => positional.run("micro", s, 1, `noop#${s}`, "noop", "intended", "idempotent", `micro:noop#${s}`, null, null, null, 1, null, 0, null, null));
  const outcome = (s) => ({ seq: s, status: "succeeded", value: '{"ok":true}', error: null, endedAt: 2, calls: 1, resolution: null, usage: null });
  per100("INSERT + UPDATE outcome, named params, { ...outcome, runId } spread", (s) => {
    named.run(row(s));
    updNamed.run({ ...outcome(s), runId: "micro" });
  });
  per100("INSERT + UPDATE outcome, positional params", (s) => {
    positional.run("micro", s, 1, `noop#${s}`, "noop", "intended", "idempotent", `micro:noop#${s}`, null, null, null, 1, null, 0, null, null);
    const o = outcome(s);
    updPos.run(o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, "micro", s);
  });
  await time("await setImmediate (one event-loop turn)", () => new Promise((r) => setImmediate(r)));
  await time("await a resolved promise", () => Promise.resolve());
  timeSync("new AbortController + add/removeEventListener on a parent signal + .signal", () => {
    const parent = new AbortController().signal;
    const c = new AbortController();
    const on = () => c.abort();
    parent.addEventListener("abort", on, { once: true });
    void c.signal;
    parent.removeEventListener("abort", on);
  });
  const parentSignal = new AbortController().signal;
  timeSync("  the same with one long-lived parent (steplog's case)", () => {
    const c = new AbortController();
    const on = () => c.abort();
    parentSignal.addEventListener("abort", on, { once: true });
    void c.signal;
    parentSignal.removeEventListener("abort", on);
  });
  timeSync("JSON.stringify + JSON.parse of { ok: true, i }", (i) => JSON.parse(JSON.stringify({ ok: true, i })));
  db.close();
}
