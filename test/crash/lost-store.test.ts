// A continue whose evidence is gone is refused, never quietly restarted: a deleted store, a
// store replaced by garbage, a store that cannot be written.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "../helpers/sqlite-driver.js";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { tmpDb, tmpDir } from "../helpers/tmp.js";
import { readLedger, runWorker } from "../helpers/worker.js";

const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");

describe("a store deleted or replaced while a process has it open", () => {
  const flow = defineWorkflow({ name: "flow", run: (ctx) => ctx.step("only", async () => "done") });
  const waiting = defineWorkflow({ name: "waiting", run: (ctx) => ctx.waitForEvent("go") });

  it("deleted: start, continue and commands are refused with STORE_FILE_GONE, nothing acknowledged into the void", async () => {
    const dir = tmpDir();
    const file = path.join(dir, ".steplog", "steplog.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [flow, waiting] });
    expect(await engine.start(flow, undefined, { id: "before" })).toMatchObject({ status: "completed" });
    expect(await engine.start(waiting, undefined, { id: "parked" })).toMatchObject({ status: "waiting" });
    fs.rmSync(path.join(dir, ".steplog"), { recursive: true });
    const started = await engine.start(flow, undefined, { id: "after" }).catch((e: unknown) => e);
    expect(started).toMatchObject({ code: "STORE_FILE_GONE", runId: "after" });
    expect((started as Error).message).toContain(`${file} was deleted while this process had it open`);
    await expect(engine.continue("before")).rejects.toMatchObject({ code: "STORE_FILE_GONE" });
    await expect(engine.send("parked", "go", 1)).rejects.toMatchObject({ code: "STORE_FILE_GONE" });
    await engine.close();
    expect(fs.existsSync(file)).toBe(false);
  });

  it("replaced by another file: refused with STORE_FILE_GONE", async () => {
    const dir = tmpDir();
    const file = path.join(dir, "runs.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    expect(await engine.start(flow, undefined, { id: "a" })).toMatchObject({ status: "completed" });
    // Another store file is moved over it.
    const other = path.join(dir, "other.db");
    const second = createEngine({ store: sqliteStore({ path: other }), workflows: [flow] });
    expect(await second.start(flow, undefined, { id: "b" })).toMatchObject({ status: "completed" });
    await second.close();
    fs.renameSync(other, file);
    const refused = await engine.start(flow, undefined, { id: "c" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "STORE_FILE_GONE", runId: "c" });
    expect((refused as Error).message).toContain("was replaced by another file while this process had it open");
    expect((refused as Error).message).toContain("Stop every process that had it open");
    await engine.close();
  });
});

describe("a lost or broken store between attempts", () => {
  it("store file deleted: RUN_NOT_FOUND, nothing started, no new file", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    for (const suffix of ["", "-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
    fs.rmSync(`${file}.ledger`);
    const second = await runWorker(file, "r", "continue");
    expect(second.report?.refused?.code).toBe("RUN_NOT_FOUND");
    expect(second.report?.refused?.message).toContain(file);
    expect(readLedger(file)).toEqual([]);
    expect(fs.existsSync(file)).toBe(false);
  });

  it("store file replaced by garbage: STORE_UNREADABLE, the file untouched, nothing started", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    for (const suffix of ["-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
    fs.writeFileSync(file, crypto.randomBytes(16_384));
    fs.rmSync(`${file}.ledger`);
    const before = sha(file);
    const second = await runWorker(file, "r", "continue");
    expect(second.report?.refused?.code).toBe("STORE_UNREADABLE");
    expect(sha(file)).toBe(before);
    expect(readLedger(file)).toEqual([]);
  });

  it("store file truncated: STORE_UNREADABLE, untouched", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { BIG_VALUES: "20000" });
    for (const suffix of ["-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
    fs.truncateSync(file, 4096);
    const before = sha(file);
    const second = await runWorker(file, "r", "continue", {}, { fromStep: "one" });
    expect(second.report?.refused?.code).toBe("STORE_UNREADABLE");
    expect(sha(file)).toBe(before);
  });

  it("a store opened read-only: refused (STORE_READ_ONLY) before any step runs; reading it still works", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    fs.rmSync(`${file}.ledger`);
    const before = sha(file);
    const second = await runWorker(file, "r", "continue", { READONLY: "1" });
    expect(second.report?.refused?.code).toBe("STORE_READ_ONLY");
    expect(second.report?.refused?.message).toContain(file);
    expect(readLedger(file)).toEqual([]);
    expect(sha(file)).toBe(before);
    const viewer = createEngine({ store: sqliteStore({ path: file, readonly: true }) });
    expect(await viewer.get("r")).toMatchObject({ status: "interrupted", steps: [{ key: "one" }, { key: "two", status: "intended" }] });
    await viewer.close();
    expect(sha(file)).toBe(before);
  });

  it("a store file the user may not write (chmod 0444): refused before any step runs", async () => {
    // Root ignores file modes, so as root the worker runs without the capabilities that let it
    // (setpriv drops CAP_DAC_OVERRIDE): it stays root and can still read this checkout, wherever it is.
    const dir = tmpDir();
    fs.chmodSync(dir, 0o777);
    const file = path.join(dir, "steplog.db");
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" });
    fs.rmSync(`${file}.ledger`);
    for (const name of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, name), 0o444);
    fs.chmodSync(dir, 0o755);
    const asRoot = process.getuid?.() === 0;
    const { spawnSync } = await import("node:child_process");
    const worker = new URL("./fixtures/worker.mjs", import.meta.url).pathname;
    const command = [process.execPath, worker, file, "r", "continue"];
    const dropCaps = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"];
    const argv = asRoot ? [...dropCaps, ...command] : command;
    const out = spawnSync(argv[0]!, argv.slice(1), { env: { ...process.env, STEPLOG_FAULT: "", HOME: os.tmpdir() }, encoding: "utf8" });
    const last = out.stdout.trim().split("\n").at(-1);
    expect(last, out.stdout + out.stderr).toMatch(/^\{/);
    const report = JSON.parse(last!);
    expect(report.refused?.code, out.stdout + out.stderr).toBe("STORE_READ_ONLY");
    expect(fs.existsSync(`${file}.ledger`)).toBe(false);
  });
});

describe("a damaged value in an otherwise sound store", () => {
  it("a step's stored value that does not decode: the continue is refused (STORE_UNREADABLE naming the run and step), nothing is written; get says the same", async () => {
    const file = tmpDb();
    await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "three" });
    // Damage one record's text as a bad page would (integrity_check still passes: the page is well formed).
    const db = new Database(file);
    db.prepare("UPDATE steps SET value = substr(value, 1, 7) WHERE key = 'two'").run();
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
    const before = sha(file);
    const next = await runWorker(file, "r", "continue");
    expect(next.report?.refused?.code, next.stdout + next.stderr).toBe("STORE_UNREADABLE");
    expect(next.report!.refused!.message).toMatch(/run "r": the record of step "two" \(attempt 1\) does not decode/);
    expect(next.report!.refused!.message).toContain("nothing was written");
    expect(next.report!.refused!.message).toContain("Restore the store from a backup");
    expect(sha(file)).toBe(before);
    expect(readLedger(file).filter((e) => e.step === "three")).toHaveLength(1);
    const engine = createEngine({ store: sqliteStore({ path: file }) });
    await expect(engine.get("r")).rejects.toMatchObject({ code: "STORE_UNREADABLE", message: expect.stringContaining("does not decode") });
    await engine.close();
  });
});
