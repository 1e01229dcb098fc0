// The JSONL store: the conformance suite, its file (greppable, 0600 in a 0700 folder), a torn
// last line, a bad line in the middle, a newer format, group commit, failing closed, and an
// engine running on it.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError } from "../../src/entries/index.js";
import { jsonlStore, type JsonlStore } from "../../src/entries/jsonl.js";
import { attemptRow, describeStore, runRow, stepRow } from "../../src/entries/testing.js";
import type { Lease } from "../../src/store/types.js";
import { tmpDir } from "../helpers/tmp.js";

const quiet = () => {};
const tmpJournal = () => path.join(tmpDir(), "steplog.jsonl");
const open = (file: string, warnings?: string[]) => jsonlStore({ path: file, onWarning: warnings ? (m) => warnings.push(m) : quiet });
const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
const NOW = Date.UTC(2030, 0, 1);

describeStore(
  "jsonl",
  {
    create: () => open(tmpJournal()),
    reopen: (closed) => open((closed as JsonlStore).path),
    another: (store) => open((store as JsonlStore).path),
    corrupt: (closed) => {
      // A bad line in the middle: refused, not skipped.
      const file = (closed as JsonlStore).path;
      const [header, ...rest] = lines(file);
      fs.writeFileSync(file, [header, "{not json", ...rest].join("\n") + "\n");
      return open(file);
    },
  },
  { describe, it },
);

async function createdRun(store: JsonlStore, id: string): Promise<Lease> {
  const lease = await store.createRun(runRow(id), attemptRow(id, 1), { expiresAt: NOW + 30_000, now: NOW });
  if ("exists" in lease) throw new Error("exists");
  return lease;
}

describe("jsonl store", () => {
  it("one header line, then one record a line; run id and step key are plain fields you can grep", async () => {
    const file = tmpJournal();
    const store = open(file);
    const lease = await createdRun(store, "run-42");
    await createdRun(store, "other");
    await store.writeIntent(lease, stepRow("run-42", 1, "charge"));
    await store.writeOutcome(lease, { seq: 1, status: "succeeded", value: '"ok"', error: null, endedAt: NOW + 1, calls: 1, resolution: null, usage: null });
    await store.endAttempt(lease, { attempt: 1, ending: "completed", endedAt: NOW + 2, error: null, run: { status: "completed" } });
    await store.close();

    const all = lines(file);
    expect(JSON.parse(all[0]!)).toEqual({ steplog: "jsonl", version: 1 });
    expect(all.slice(1).map((l) => JSON.parse(l).op)).toEqual(["create", "create", "intent", "outcome", "end"]);
    // What `grep '"run":"run-42"' steplog.jsonl` shows: that run's history, in order.
    const grepped = all.filter((l) => l.includes('"run":"run-42"'));
    expect(grepped.map((l) => JSON.parse(l).op)).toEqual(["create", "intent", "outcome", "end"]);
    expect(grepped.filter((l) => l.includes('"step":"charge"')).map((l) => JSON.parse(l).op)).toEqual(["intent", "outcome"]);
    for (const line of all.slice(1)) expect(line.startsWith('{"op":"')).toBe(true);
  });

  it("creates its folder 0700 (with a .gitignore) and file 0600; a read or claim with no file creates nothing", async () => {
    const file = path.join(tmpDir(), "nested", "steplog.jsonl");
    const store = open(file);
    expect(store.location).toBe(`jsonl store at ${file}`);
    expect(store.kind).toBe("jsonl");
    expect(await store.loadRun("r")).toBeUndefined();
    expect(await store.listRuns({})).toEqual([]);
    expect(await store.claimRun("r", () => ({ kind: "refuse", error: new Error("no") }))).toEqual({ kind: "missing" });
    expect(await store.updateRun("r", () => ({ result: 1 }))).toBeUndefined();
    await expect(store.writeIntent({ runId: "r", epoch: 1 }, stepRow("r", 1, "a"))).rejects.toMatchObject({ code: "LEASE_LOST" });
    expect(fs.existsSync(path.dirname(file))).toBe(false);

    await createdRun(store, "r");
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(path.dirname(file), ".gitignore"), "utf8")).toBe("*\n");
    expect(fs.existsSync(`${file}.lock`)).toBe(false); // the lock is held only during a commit
    await store.close();
  });

  it("a second instance on the file sees the first's writes, and its fence checks use them", async () => {
    const file = tmpJournal();
    const a = open(file);
    const b = open(file);
    const lease = await createdRun(a, "r");
    expect((await b.loadRun("r"))!.lease!.epoch).toBe(1);
    await b.updateRun("r", () => ({ fenceOut: { now: NOW }, result: true }));
    await expect(a.writeIntent(lease, stepRow("r", 1, "a"))).rejects.toMatchObject({ code: "LEASE_LOST" });
    expect((await a.loadRun("r"))!.lease).toMatchObject({ epoch: 2, attempt: null });
    await a.close();
    await b.close();
  });

  it("a write waits while another holder has the lock; a read does not wait", async () => {
    const file = tmpJournal();
    const store = open(file);
    await createdRun(store, "r");
    const release = lockfile.lockSync(file, { stale: 10_000 }); // as another process would hold it
    let written = false;
    const write = store.updateRun("r", () => ({ run: { source: "after the lock" }, result: true })).then(() => (written = true));
    try {
      const reader = open(file);
      expect((await reader.loadRun("r"))!.run.source).toBe(null);
      await reader.close();
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(written).toBe(false);
    } finally {
      release();
    }
    await write;
    expect((await store.loadRun("r"))!.run.source).toBe("after the lock");
    await store.close();
  });

  it("a run update whose lock never comes free: STORE_WRITE_FAILED naming the run, 'nothing was changed', and nothing was", async () => {
    const file = tmpJournal();
    const store = jsonlStore({ path: file, onWarning: quiet, lockStaleMs: 2000 });
    await createdRun(store, "r");
    const before = sha(file);
    const release = lockfile.lockSync(file, { stale: 2000 }); // a live holder: it refreshes the lock every second
    try {
      const error = await store.updateRun("r", () => ({ run: { source: "never" }, result: true })).catch((e: unknown) => e);
      expect(isSteplogError(error, "STORE_WRITE_FAILED"), String(error)).toBe(true);
      expect((error as Error).message).toContain('of run "r"');
      expect((error as Error).message).toContain("Nothing was changed");
    } finally {
      release();
    }
    expect(sha(file)).toBe(before);
    await store.close();
  }, 15_000);

  it("writes of one turn share one commit; a stale fence refuses just its own write", async () => {
    const file = tmpJournal();
    const store = open(file);
    const live = await createdRun(store, "live");
    const stale = await createdRun(store, "stale");
    await store.updateRun("stale", () => ({ fenceOut: { now: NOW }, result: true }));
    const sizeBefore = fs.statSync(file).size;
    const results = await Promise.allSettled([
      store.writeIntent(live, stepRow("live", 1, "a")),
      store.writeIntent(stale, stepRow("stale", 1, "a")),
      store.writeIntent(live, stepRow("live", 2, "b")),
      store.renewLease(live, NOW + 99_000, NOW + 1),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "LEASE_LOST" });
    const appended = fs.readFileSync(file, "utf8").slice(sizeBefore).split("\n").filter(Boolean);
    expect(appended.map((l) => JSON.parse(l).op)).toEqual(["intent", "intent", "renew"]);
    expect((await store.loadRun("live"))!.steps.map((s) => s.key)).toEqual(["a", "b"]);
    expect((await store.loadRun("stale"))!.steps).toEqual([]);
    await store.close();
  });

  it("a torn last line is ignored and warned about once; the next write cuts it off and the run goes on", async () => {
    const file = tmpJournal();
    const first = open(file);
    const lease = await createdRun(first, "r");
    await first.writeIntent(lease, stepRow("r", 1, "a"));
    await first.close();
    const intact = fs.readFileSync(file);
    // A crash mid-append: half a record, no newline.
    const record = JSON.stringify({ op: "outcome", run: "r", step: "a", epoch: 1, seq: 1, status: "succeeded", value: '"x"' });
    fs.appendFileSync(file, record.slice(0, 40));

    const warnings: string[] = [];
    const store = open(file, warnings);
    const before = (await store.loadRun("r"))!;
    expect(before.steps.map((s) => [s.key, s.status])).toEqual([["a", "intended"]]);
    await store.listRuns({});
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/torn last line 4 \(40 bytes; it has no newline\).*It began: \{"op":"outcome"/);
    expect(fs.readFileSync(file).subarray(0, intact.length).equals(intact)).toBe(true); // a read changes nothing

    await store.writeOutcome(lease, { seq: 1, status: "succeeded", value: '"ok"', error: null, endedAt: NOW + 1, calls: 1, resolution: null, usage: null });
    expect(warnings).toHaveLength(1);
    const all = lines(file);
    expect(all).toHaveLength(4);
    expect(JSON.parse(all[3]!)).toMatchObject({ op: "outcome", run: "r", step: "a", value: '"ok"' });
    await store.close();
    expect((await open(file).loadRun("r"))!.steps[0]!.status).toBe("succeeded");
  });

  it("an engine continues a run whose journal ends in a torn line", async () => {
    const file = tmpJournal();
    let fail = true;
    const w = defineWorkflow({
      name: "torn",
      async run(ctx) {
        const a = await ctx.step("a", async () => 1);
        if (fail) throw new Error("x");
        return a + (await ctx.step("b", async () => 2));
      },
    });
    const first = createEngine({ store: open(file), workflows: [w] });
    await first.start(w, undefined, { id: "r" });
    await first.close();
    fs.appendFileSync(file, '{"op":"claim","run":"r","epoch":2,"attem');
    fail = false;
    const warnings: string[] = [];
    const second = createEngine({ store: open(file, warnings), workflows: [w] });
    expect(await second.continue("r")).toMatchObject({ status: "completed", value: 3 });
    await second.close();
    expect(warnings).toHaveLength(1);
    expect(lines(file).every((l) => JSON.parse(l))).toBeTruthy();
  });

  it("a last line that is complete but not JSON (zeros after a power loss) is torn too", async () => {
    const file = tmpJournal();
    const store = open(file);
    await createdRun(store, "r");
    await store.close();
    fs.appendFileSync(file, Buffer.concat([Buffer.alloc(30), Buffer.from("\n")]));
    const warnings: string[] = [];
    const again = open(file, warnings);
    expect((await again.loadRun("r"))!.run.id).toBe("r");
    expect(warnings[0]).toMatch(/torn last line 3 \(31 bytes; it is not JSON\)/);
    await again.close();
  });

  it("a bad line in the middle: STORE_UNREADABLE naming its line, the file untouched, nothing written", async () => {
    const file = tmpJournal();
    const store = open(file);
    const lease = await createdRun(store, "r");
    await store.writeIntent(lease, stepRow("r", 1, "a"));
    await store.close();
    const [header, create, intent] = lines(file);
    fs.writeFileSync(file, [header, create, create!.slice(0, 30), intent].join("\n") + "\n");
    const before = sha(file);

    const broken = open(file);
    const error = await broken.loadRun("r").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_UNREADABLE" });
    expect((error as Error).message).toContain("line 3 is not JSON");
    expect((error as Error).message).toContain(file);
    await expect(broken.claimRun("r", () => ({ kind: "refuse", error: new Error("no"), run: { status: "failed" } }))).rejects.toMatchObject({
      code: "STORE_UNREADABLE",
    });
    await expect(broken.writeIntent(lease, stepRow("r", 2, "b"))).rejects.toMatchObject({ code: "STORE_UNREADABLE" });
    await expect(broken.createRun(runRow("new"), attemptRow("new", 1), { expiresAt: NOW, now: NOW })).rejects.toMatchObject({ code: "STORE_UNREADABLE" });
    expect(sha(file)).toBe(before);
    await broken.close();

    // A line that is JSON but no record is refused the same way.
    fs.writeFileSync(file, [header, '{"hello":"world"}', create].join("\n") + "\n");
    await expect(open(file).loadRun("r")).rejects.toThrow(/line 2 has an unknown op \(none\)/);
  });

  it("a file that is not a journal (no header, random bytes, another JSONL log): STORE_UNREADABLE, untouched", async () => {
    for (const content of [crypto.randomBytes(4096), Buffer.from('{"level":"info","msg":"hello"}\n'), Buffer.from("plain text without newline")]) {
      const file = tmpJournal();
      fs.writeFileSync(file, content);
      const store = open(file);
      const error = await store.createRun(runRow("r"), attemptRow("r", 1), { expiresAt: NOW, now: NOW }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "STORE_UNREADABLE" });
      expect((error as Error).message).toContain("line 1 is not a steplog journal header");
      expect(fs.readFileSync(file).equals(content)).toBe(true);
      expect(fs.readdirSync(path.dirname(file))).toEqual([path.basename(file)]);
    }
  });

  it("a journal from a newer steplog: STORE_TOO_NEW, untouched", async () => {
    const file = tmpJournal();
    const store = open(file);
    await createdRun(store, "r");
    await store.close();
    const [, ...rest] = lines(file);
    fs.writeFileSync(file, [JSON.stringify({ steplog: "jsonl", version: 2 }), ...rest].join("\n") + "\n");
    const before = sha(file);
    const engine = createEngine({ store: open(file), workflows: [] });
    const error = await engine.continue("r").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "STORE_TOO_NEW" });
    expect((error as Error).message).toContain("schema version 2");
    await expect(open(file).createRun(runRow("x"), attemptRow("x", 1), { expiresAt: NOW, now: NOW })).rejects.toMatchObject({ code: "STORE_TOO_NEW" });
    expect(sha(file)).toBe(before);
  });

  it("a header cut short by a crash at creation is completed by the next write", async () => {
    const file = tmpJournal();
    fs.writeFileSync(file, '{"steplog":"js', { mode: 0o600 });
    const warnings: string[] = [];
    const store = open(file, warnings);
    expect(await store.listRuns({})).toEqual([]);
    await createdRun(store, "r");
    expect(lines(file).map((l) => JSON.parse(l).op ?? "header")).toEqual(["header", "create"]);
    expect(warnings).toHaveLength(1);
    await store.close();
  });

  it("fails closed when the lock proves not exclusive: that write and every later one are refused (STORE_WRITE_FAILED), reads go on", async () => {
    const file = tmpJournal();
    const warnings: string[] = [];
    const store = open(file, warnings);
    await createdRun(store, "r");
    // An intruder appends while this store holds the lock (as after a takeover of a frozen holder).
    const intruder = JSON.stringify({ op: "update", run: "r", patch: { source: "intruder" } }) + "\n";
    const write = store.updateRun("r", () => {
      fs.appendFileSync(file, intruder);
      return { run: { status: "failed" }, result: true };
    });
    await expect(write).rejects.toMatchObject({ code: "STORE_WRITE_FAILED", message: expect.stringMatching(/lock .*\.lock was compromised/) });
    expect(lines(file).some((l) => l.includes('"status":"failed"'))).toBe(false);
    await expect(store.updateRun("r", () => ({ run: { status: "failed" }, result: true }))).rejects.toMatchObject({ code: "STORE_WRITE_FAILED" });
    await expect(store.createRun(runRow("x"), attemptRow("x", 1), { expiresAt: NOW, now: NOW })).rejects.toMatchObject({ code: "STORE_WRITE_FAILED" });
    expect((await store.loadRun("r"))!.run.source).toBe("intruder");
    expect(warnings.filter((w) => w.includes("compromised"))).toHaveLength(1);
    await store.close();
    // A new instance writes again.
    const fresh = open(file);
    await fresh.updateRun("r", () => ({ run: { status: "failed" }, result: true }));
    expect((await fresh.loadRun("r"))!.run.status).toBe("failed");
    await fresh.close();
  });

  it("a record written without the lock that conflicts (a second claim of one epoch) is skipped on replay, with a warning", async () => {
    const file = tmpJournal();
    const store = open(file);
    const first = await createdRun(store, "r");
    await store.endAttempt(first, { attempt: 1, ending: "failed", endedAt: NOW, error: null, run: { status: "failed" } });
    const taken = await store.claimRun("r", () => ({ kind: "take", attempt: attemptRow("r", 2), run: { attempts: 2 }, expiresAt: NOW + 1, now: NOW }));
    expect(taken.kind).toBe("taken");
    await store.close();
    const claim = lines(file).find((l) => l.startsWith('{"op":"claim"'))!;
    fs.appendFileSync(file, claim.replace('"number":2', '"number":3') + "\n");
    const warnings: string[] = [];
    const again = open(file, warnings);
    expect((await again.loadRun("r"))!.attempts.map((a) => a.number)).toEqual([1, 2]);
    expect(warnings).toEqual([expect.stringMatching(/line 5 ignored on replay \(.*epoch 2.*\); it was written by a process that had lost the file lock/)]);
    await again.close();
  });

  it("options are checked: a path, durability power|process, lockStaleMs ≥ 2000", () => {
    expect(() => jsonlStore({} as never)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => jsonlStore({ path: "x", durability: "disk" as never })).toThrow(/durability/);
    expect(() => jsonlStore({ path: "x", lockStaleMs: 500 })).toThrow(/lockStaleMs must be a number of milliseconds ≥ 2000/);
    expect(jsonlStore({ path: "x", lockStaleMs: 2000, durability: "process" }).location).toBe(`jsonl store at ${path.resolve("x")}`);
  });

  it("an engine runs a three-step workflow on it: fails, continues, completes without redoing a step", async () => {
    const file = tmpJournal();
    const calls: string[] = [];
    let failAt: string | undefined = "three";
    const w = defineWorkflow({
      name: "three",
      async run(ctx) {
        const step = (key: string) =>
          ctx.step(key, async () => {
            calls.push(key);
            if (failAt === key) throw new Error(`${key} failed`);
            return `${key}!`;
          });
        return [await step("one"), await step("two"), await step("three")];
      },
    });
    for (const durability of ["power", "process"] as const) {
      calls.length = 0;
      failAt = "three";
      const engine = createEngine({ store: jsonlStore({ path: file, durability }), workflows: [w] });
      const id = `r-${durability}`;
      const failed = await engine.start(w, undefined, { id });
      expect(failed).toMatchObject({ status: "failed" });
      failAt = undefined;
      await engine.close();
      const again = createEngine({ store: jsonlStore({ path: file, durability }), workflows: [w] });
      expect(await again.continue(id)).toMatchObject({ status: "completed", value: ["one!", "two!", "three!"] });
      expect(calls.filter((c) => c !== "three")).toEqual(["one", "two"]);
      const view = await again.get(id);
      expect(view.steps.filter((s) => s.status === "succeeded").map((s) => s.key)).toEqual(["one", "two", "three"]);
      expect((await again.list()).map((r) => r.id).sort()).toContain(id);
      await again.close();
    }
    expect(lines(file).filter((l) => l.includes('"run":"r-power"')).length).toBeGreaterThan(6);
  });
});
