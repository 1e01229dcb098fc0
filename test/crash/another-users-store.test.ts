// A SQLite store in a folder that belongs to another user (a shared folder), read by a process
// running as `nobody`: the file readable, the folder not writable, so SQLite cannot make its -wal
// and -shm beside it. Reads answer (what was committed, never a stale copy), every write is
// STORE_READ_ONLY naming the folder, and nothing in the folder changes. Needs root to switch
// users (CI has it); elsewhere the suite says it is skipped.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Database } from "../helpers/sqlite-driver.js";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { childEnv } from "../cli/helpers.js";
import { spawnNode } from "../helpers/child.js";
import { tmpDir } from "../helpers/tmp.js";

const isRoot = process.getuid?.() === 0;
if (!isRoot && !process.env.CI) console.warn("another user's store tests skipped: they switch users (run as root, as CI does)");
const rootIt = isRoot || process.env.CI ? it : it.skip;

/**
 * The built package, the reader and the SQLite driver copied to a folder `nobody` may enter: a
 * checkout in a folder closed to other users (a CI clone under a 0700 temp folder, root's home)
 * cannot be run as nobody in place.
 */
function copyForOthers(): string {
  const root = path.resolve(import.meta.dirname, "..", "..");
  const to = tmpDir("steplog-as-nobody-");
  fs.cpSync(path.join(root, "dist"), path.join(to, "dist"), { recursive: true });
  for (const dependency of ["better-sqlite3", "bindings", "file-uri-to-path"]) {
    const from = path.join(root, "node_modules", dependency);
    if (!fs.existsSync(from)) continue;
    // Not its sources: package.json, lib/ and the built module are what loading it reads.
    fs.cpSync(from, path.join(to, "node_modules", dependency), {
      recursive: true,
      filter: (file) => !/[/\\](deps|src|build[/\\](?!Release(?:$|[/\\]better_sqlite3\.node$)))/.test(path.relative(root, file)),
    });
  }
  fs.mkdirSync(path.join(to, "test", "crash", "fixtures"), { recursive: true });
  fs.copyFileSync(path.join(import.meta.dirname, "fixtures", "store-reader.mjs"), path.join(to, "test", "crash", "fixtures", "store-reader.mjs"));
  for (let dir = to; dir !== path.dirname(to); dir = path.dirname(dir)) if (dir.startsWith(os.tmpdir()) && dir !== os.tmpdir()) fs.chmodSync(dir, 0o755);
  return to;
}
const AS_OTHERS = copyForOthers();
const READER = path.join(AS_OTHERS, "test", "crash", "fixtures", "store-reader.mjs");
const CLI = path.join(AS_OTHERS, "dist", "cli.js");
const AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"];
const nobody = () => Number(execFileSync("id", ["-u", "nobody"], { encoding: "utf8" }));

const flow = defineWorkflow({
  name: "flow",
  async run(ctx) {
    await ctx.step("a", async () => 1);
    return ctx.step("b", async () => 2);
  },
});

/** A folder of root's (0755: others may enter and read, not write) holding a store with run "r", closed cleanly. */
async function rootsFolder(fileMode = 0o644): Promise<{ dir: string; file: string }> {
  const dir = tmpDir();
  fs.chmodSync(dir, 0o755);
  const file = path.join(dir, "steplog.db");
  const engine = createEngine({ store: sqliteStore({ path: file, onWarning: () => {} }), workflows: [flow] });
  expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed" });
  await engine.close();
  fs.chmodSync(file, fileMode);
  return { dir, file };
}

/** What the reader printed, run as nobody. */
async function lookAsNobody(file: string): Promise<any> {
  const { code, report, stderr } = await spawnNode(READER, [file, "look"], { under: AS_NOBODY }).done;
  expect(code, stderr).toBe(0);
  return report;
}

function cliAsNobody(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, uid: nobody(), gid: nobody(), encoding: "utf8", env: childEnv({ NO_COLOR: "1" }) });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The folder's names and every file's bytes, to show nothing was written. */
function contents(dir: string): Record<string, string> {
  return Object.fromEntries(fs.readdirSync(dir).map((name) => [name, fs.readFileSync(path.join(dir, name)).toString("base64")]));
}

const REFUSED = {
  code: "STORE_READ_ONLY",
  message: expect.stringMatching(
    /its folder .* is not writable by this user \(EACCES; owned by uid 0, mode 755\): SQLite must make its -wal and -shm files there/,
  ),
};

describe("a store in another user's folder, read as nobody", () => {
  rootIt("the file readable: get, list, steplog runs and show answer; writes are STORE_READ_ONLY naming the folder; nothing changes", async () => {
    const { dir, file } = await rootsFolder();
    const before = contents(dir);
    const seen = await lookAsNobody(file);
    expect(seen.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(seen.list).toEqual({ value: ["r"] });
    expect(seen.start).toMatchObject(REFUSED);
    expect(seen.continue).toMatchObject(REFUSED);
    expect(seen.start.message).toContain(dir);
    // Told the file is shared, but not to chmod a file it does not own.
    expect(seen.warnings).toEqual([expect.stringMatching(/can be read by other users \(mode 644\).*Its owner \(uid 0\) can restrict it: chmod 600/)]);

    const runs = cliAsNobody(["runs", "--db", file], dir);
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toMatch(/^r +flow +completed/m);
    const show = cliAsNobody(["show", "r", "--db", file], dir);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain("completed");
    expect(contents(dir)).toEqual(before);
  });

  rootIt("the file writable by nobody but the folder not: still read-only (SQLite could not make its -wal), refused before anything is written", async () => {
    const { dir, file } = await rootsFolder(0o666);
    const before = contents(dir);
    const seen = await lookAsNobody(file);
    expect(seen.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(seen.start).toMatchObject(REFUSED);
    expect(seen.start.message).not.toContain("the file is not writable");
    expect(contents(dir)).toEqual(before);
  });

  rootIt("a folder nobody can write but a file it cannot: the write's error names the file, its owner and mode", async () => {
    const dir = tmpDir();
    const file = path.join(dir, "steplog.db");
    const engine = createEngine({ store: sqliteStore({ path: file, onWarning: () => {} }), workflows: [flow] });
    await engine.start(flow, undefined, { id: "r" });
    await engine.close();
    fs.chmodSync(file, 0o644);
    execFileSync("chown", ["nobody", dir]);
    const seen = await lookAsNobody(file);
    expect(seen.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(seen.start).toMatchObject({
      code: "STORE_READ_ONLY",
      message: expect.stringContaining("the file is not writable by this user (EACCES; owned by uid 0, mode 644)"),
    });
  });

  rootIt("a file nobody may read at all: STORE_UNREADABLE naming its owner and mode, not 'restore it from a backup'", async () => {
    const { dir, file } = await rootsFolder(0o600);
    const seen = await lookAsNobody(file);
    expect(seen.get).toMatchObject({
      code: "STORE_UNREADABLE",
      message: expect.stringContaining("this user may not read it (EACCES; owned by uid 0, mode 600)"),
    });
    expect(seen.get.message).not.toMatch(/restore it from a backup/);
    const runs = cliAsNobody(["runs", "--db", file], dir);
    expect(runs.code).toBe(5);
    expect(runs.stderr).toContain("this user may not read it");
  });

  rootIt("steps committed to the -wal by a writer SIGKILLed there are read; without the -shm too; a -wal nobody may read is refused, not skipped", async () => {
    const dir = tmpDir();
    fs.chmodSync(dir, 0o755);
    const file = path.join(dir, "steplog.db");
    fs.writeFileSync(file, "", { mode: 0o644 }); // SQLite gives its -wal and -shm the file's mode
    const writer = spawnNode(READER, [file, "write", "r"]);
    await writer.ready;
    writer.child.kill("SIGKILL");
    await writer.done;
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(0);
    // The file alone does not hold the run yet: a read that skipped the -wal would not find it.
    const alone = path.join(tmpDir(), "alone.db");
    fs.copyFileSync(file, alone);
    const db = new Database(alone, { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'runs'").get()).toEqual({ n: 0 });
    db.close();

    const withShm = await lookAsNobody(file);
    expect(withShm.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(withShm.start).toMatchObject({ code: "STORE_READ_ONLY" });

    fs.rmSync(`${file}-shm`); // as a backup that copied the file and its -wal only
    const before = contents(dir);
    const withoutShm = await lookAsNobody(file);
    expect(withoutShm.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(withoutShm.list).toEqual({ value: ["r"] });
    expect(contents(dir)).toEqual(before);

    fs.chmodSync(`${file}-wal`, 0o600);
    const hidden = await lookAsNobody(file);
    for (const call of [hidden.get, hidden.list]) {
      expect(call).toMatchObject({ code: "STORE_UNREADABLE", message: expect.stringContaining(`${file}-wal`) });
      expect(call.message).toMatch(/may hold steps not yet in the file/);
      expect(call.message).not.toMatch(/restore it from a backup/);
    }
    const runs = cliAsNobody(["runs", "--db", file], dir);
    expect(runs.code).toBe(5);
    expect(runs.stderr).toContain("STORE_UNREADABLE");
  });

  rootIt("while its owner's process has the store open (its -wal and -shm there): read in place, writes refused", async () => {
    const dir = tmpDir();
    fs.chmodSync(dir, 0o755);
    const file = path.join(dir, "steplog.db");
    fs.writeFileSync(file, "", { mode: 0o644 });
    const writer = spawnNode(READER, [file, "write", "r"]);
    await writer.ready;
    const seen = await lookAsNobody(file);
    expect(seen.get).toEqual({ value: { status: "completed", value: 2, steps: ["a", "b"] } });
    expect(seen.list).toEqual({ value: ["r"] });
    expect(seen.start).toMatchObject(REFUSED);
    writer.child.kill("SIGKILL");
    await writer.done;
  });

  rootIt("a reader that stays open sees runs its owner records afterwards: never a stale copy", async () => {
    const { dir, file } = await rootsFolder();
    const flag = path.join(dir, "go");
    const reader = spawnNode(READER, [file, "look", flag], { under: AS_NOBODY });
    await reader.ready;
    const owner = createEngine({ store: sqliteStore({ path: file, onWarning: () => {} }), workflows: [flow] });
    await owner.start(flow, undefined, { id: "t" });
    await owner.close();
    fs.writeFileSync(flag, "");
    const { code, stdout, stderr } = await reader.done;
    expect(code, stderr).toBe(0);
    const [first, second] = stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    expect(first.list).toEqual({ value: ["r"] });
    expect(second.list).toEqual({ value: ["r", "t"] });
  });
});
