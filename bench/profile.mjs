// Where case 1's time goes (not part of `npm run bench`):
//
//   node bench/profile.mjs count [power|process]     SQL statements, transactions and prepares per step
//   node bench/profile.mjs split [power|process]     time split: in SQLite (BEGIN..COMMIT) vs in JS, steplog vs raw
//   node bench/profile.mjs split-conc [power|process] the same for 100 runs × 100 steps at once, against raw group commit
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile.mjs cpu [process]    steplog only, for a CPU profile
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/profile.mjs cpu-conc [process]  the same, 100 runs at once
//   node bench/profile.mjs top /tmp/prof/x.cpuprofile                           self and total time by function
//   node bench/profile.mjs floor                       case 2's step protocol in its bare await form (no store), per step
//
// Build first (npm run build).

import fs from "node:fs";
import {
  Database,
  RawStepLog,
  cleanup,
  createEngine,
  createRawSchemaFile,
  expectStatus,
  now,
  openRaw,
  rawGroupCommit,
  rawRunId,
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

/**
 * Time spent inside write transactions, from BEGIN's start to COMMIT's end (fsync included):
 * better-sqlite3 runs BEGIN and COMMIT as statements, so wrapping Statement#run sees both.
 */
function timeTransactions() {
  const probe = new Database(":memory:");
  const Statement = probe.prepare("SELECT 1").constructor;
  probe.close();
  let inTxn = 0;
  let inCommit = 0;
  let commits = 0;
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
      commits++;
    }
    return result;
  };
  return {
    reset() {
      inTxn = inCommit = commits = 0;
    },
    read: () => ({ inTxn, inCommit, commits }),
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
  console.log(
    `  db.prepare() calls: ${(counts.prepare / steps).toFixed(3)}   db.transaction() wrappers built: ${(counts.transactionWrappers / steps).toFixed(3)}`,
  );
  for (const [k, v] of [...counts.byStatement].sort((a, b) => b[1] - a[1])) console.log(`  ${(v / steps).toFixed(3)}  ${k}`);
}

if (mode === "count") {
  const durability = arg;
  const file = tmpFile("count-raw");
  await createRawSchemaFile(file);
  const raw = openRaw(file, syncFor(durability));
  const log = new RawStepLog(raw);
  const lib = await steplogRun(durability);
  await log.run("warm", 10);
  let counts = instrument();
  await log.run(rawRunId(), N);
  report("raw", counts, N);
  counts.prepare = counts.transactionWrappers = 0;
  counts.byStatement.clear();
  await lib.go();
  report("steplog", counts, N);
  raw.close();
  await lib.engine.close();
} else if (mode === "split-conc") {
  // Case 2's shape: where a step's time goes with 100 runs at once, steplog vs raw group commit.
  const timer = timeTransactions();
  const engine = createEngine({ store: sqliteStore({ path: tmpFile("split-conc"), durability: arg }), workflows: [seqWorkflow] });
  expectStatus(await engine.start(seqWorkflow, 200), "completed", "warm-up");
  const rawFile = tmpFile("split-conc-raw");
  await createRawSchemaFile(rawFile);
  const raw = openRaw(rawFile, syncFor(arg));
  const rows = [];
  for (let rep = 0; rep < 7; rep++) {
    for (const [label, fn] of [
      ["raw", async () => rawGroupCommit(raw, 100, 100)],
      [
        "steplog",
        async () => {
          const results = await Promise.all(Array.from({ length: 100 }, () => engine.start(seqWorkflow, 100)));
          for (const r of results) expectStatus(r, "completed", "profile");
        },
      ],
    ]) {
      timer.reset();
      const t = now();
      await fn();
      rows.push({ label, total: now() - t, ...timer.read() });
    }
  }
  const us = (ms) => ((ms * 1000) / 10_000).toFixed(1);
  for (const label of ["raw", "steplog"]) {
    const m = rows.filter((r) => r.label === label).sort((a, b) => a.total - b.total)[3];
    console.log(
      `${label.padEnd(8)} total ${us(m.total)} µs/step = BEGIN..COMMIT ${us(m.inTxn)} (COMMIT alone ${us(m.inCommit)}, ${(m.commits / 100).toFixed(2)} commits per round) + outside transactions ${us(m.total - m.inTxn)}`,
    );
  }
  raw.close();
  await engine.close();
} else if (mode === "split") {
  // Time inside SQLite (the transaction function: BEGIN..COMMIT, fsync included) vs the rest.
  const durability = arg;
  const timer = timeTransactions();
  const file = tmpFile("split-raw");
  await createRawSchemaFile(file);
  const raw = openRaw(file, syncFor(durability));
  const log = new RawStepLog(raw);
  const lib = await steplogRun(durability, 1);
  await log.run("warm", 200);
  const rows = [];
  for (let rep = 0; rep < 5; rep++) {
    for (const [label, fn] of [
      ["raw", () => log.run(rawRunId(), N)],
      ["steplog", () => lib.go()],
    ]) {
      timer.reset();
      const t = now();
      await fn();
      const total = now() - t;
      rows.push({ label, total, ...timer.read() });
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
  console.log(`steplog ${(((now() - t) * 1000) / (10 * N)).toFixed(1)} µs/step`);
  await lib.engine.close();
} else if (mode === "cpu-conc") {
  // 100 runs × 100 steps at once (case 2's shape), steplog only.
  const engine = createEngine({ store: sqliteStore({ path: tmpFile("prof-conc"), durability: arg }), workflows: [seqWorkflow] });
  expectStatus(await engine.start(seqWorkflow, 200), "completed", "warm-up");
  const t = now();
  for (let rep = 0; rep < 5; rep++) {
    const results = await Promise.all(Array.from({ length: 100 }, () => engine.start(seqWorkflow, 100)));
    for (const r of results) expectStatus(r, "completed", "profile");
  }
  console.log(`steplog ${(((now() - t) * 1000) / (5 * 100 * 100)).toFixed(1)} µs/step`);
  await engine.close();
} else if (mode === "floor") {
  // The bare form case 2's step protocol is written in, with no store and no bookkeeping: 100
  // async loops of 100 steps, each step awaiting a promise that a batch resolves on the event
  // loop's next turn, then calling an async function and turning its value to JSON and back.
  let pending = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const batch = pending;
    pending = [];
    for (const resolve of batch) resolve();
  };
  const intent = () =>
    new Promise((resolve) => {
      pending.push(resolve);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  const step = async (fn) => {
    await intent();
    return JSON.parse(JSON.stringify(await fn()));
  };
  const loop = async (n) => {
    for (let i = 1; i <= n; i++) await step(async () => ({ ok: true, i }));
  };
  for (let rep = 0; rep < 5; rep++) await Promise.all(Array.from({ length: 100 }, () => loop(100)));
  const t = now();
  for (let rep = 0; rep < 20; rep++) await Promise.all(Array.from({ length: 100 }, () => loop(100)));
  console.log(`the bare await form ${(((now() - t) * 1000) / (20 * 100 * 100)).toFixed(2)} µs/step`);
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
