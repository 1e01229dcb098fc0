// Stores an operator's machine cannot write: a read-only mount (a tmpfs remounted read-only) and
// a folder owned by another user (the process run as `nobody` with setpriv). The cause is named
// (STORE_READ_ONLY, the CLI's exit 5), the file is untouched, and reads still work. Needs root
// (CI has it); elsewhere the suite says it is skipped.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, defineWorkflow } from "../../src/entries/index.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import { BIN, example } from "../cli/helpers.js";
import { tmpDir } from "../helpers/tmp.js";

const isRoot = process.getuid?.() === 0;
if (!isRoot && !process.env.CI) console.warn("read-only store tests skipped: they mount file systems and switch users (run as root, as CI does)");
const rootIt = isRoot || process.env.CI ? it : it.skip;

const mounted: string[] = [];
afterAll(() => {
  for (const dir of mounted) spawnSync("umount", [dir]);
});

/** A tmpfs at a fresh folder, filled by `fill`, then remounted read-only. */
async function readOnlyMount(fill: (dir: string) => Promise<void> | void): Promise<string> {
  const dir = tmpDir();
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", dir]);
  mounted.push(dir);
  await fill(dir);
  execFileSync("mount", ["-o", "remount,ro", dir]);
  return dir;
}

const flow = defineWorkflow({
  name: "flow",
  async run(ctx) {
    await ctx.step("a", async () => 1);
    return ctx.step("b", async () => 2);
  },
});

/**
 * `withoutDac`: as root without the capabilities that let root ignore file modes (setpriv drops
 * CAP_DAC_OVERRIDE): it can still read this checkout wherever it is, but not write where only
 * another user may.
 */
function cli(args: string[], cwd: string, withoutDac = false) {
  const command = withoutDac
    ? ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search", process.execPath]
    : [process.execPath];
  const r = spawnSync(command[0]!, [...command.slice(1), BIN, ...args], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("stores that cannot be written", () => {
  rootIt("a cleanly closed store on a read-only mount: STORE_READ_ONLY for writes, reads work, the file is untouched", async () => {
    const dir = await readOnlyMount(async (d) => {
      const engine = createEngine({ store: sqliteStore({ path: path.join(d, "steplog.db") }), workflows: [flow] });
      expect(await engine.start(flow, undefined, { id: "r" })).toMatchObject({ status: "completed" });
      await engine.close();
    });
    const file = path.join(dir, "steplog.db");
    const before = fs.readFileSync(file);
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    expect(await engine.get("r")).toMatchObject({ status: "completed", value: 2 });
    expect((await engine.list()).map((r) => r.id)).toEqual(["r"]);
    const refused = await engine.continue("r", { fromStep: "b" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "STORE_READ_ONLY", message: expect.stringContaining("it lies on a read-only file system") });
    await expect(engine.start(flow, undefined, { id: "s" })).rejects.toMatchObject({ code: "STORE_READ_ONLY" });
    await engine.close();
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(fs.readdirSync(dir).sort()).toEqual(["steplog.db"]);

    const runs = cli(["runs", "--db", file], dir);
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toMatch(/^r +flow +completed/m);
    expect(cli(["show", "r", "--db", file], dir).code).toBe(0);
    const run = cli(["run", example("hello.mjs"), "--db", file, "--", '{"topic":"x"}'], dir);
    expect(run.code, run.stderr).toBe(5);
    expect(run.stderr).toContain("STORE_READ_ONLY");
    expect(run.stderr).not.toMatch(/INTERNAL|a bug in steplog/);
  });

  rootIt("a new store where the folder cannot be created (a read-only mount): STORE_READ_ONLY, CLI exit 5", async () => {
    const dir = await readOnlyMount(() => {});
    const file = path.join(dir, "new", "steplog.db");
    const engine = createEngine({ store: sqliteStore({ path: file }), workflows: [flow] });
    await expect(engine.start(flow, undefined, { id: "r" })).rejects.toMatchObject({ code: "STORE_READ_ONLY", message: expect.stringContaining("EROFS") });
    await engine.close();
    const run = cli(["run", example("hello.mjs"), "--db", file, "--", '{"topic":"x"}'], dir);
    expect(run.code, run.stderr).toBe(5);
    expect(run.stderr).toContain("STORE_READ_ONLY");
    expect(fs.existsSync(path.dirname(file))).toBe(false);
  });

  rootIt("a folder owned by another user: STORE_READ_ONLY (EACCES) for a new store, CLI exit 5", async () => {
    const dir = tmpDir();
    execFileSync("chown", ["nobody:nogroup", dir]);
    fs.chmodSync(dir, 0o755);
    const run = cli(["run", example("hello.mjs"), "--db", path.join(dir, "steplog.db"), "--", '{"topic":"x"}'], dir, true);
    expect(run.code, run.stderr).toBe(5);
    expect(run.stderr).toContain("STORE_READ_ONLY");
    expect(run.stderr).toContain("EACCES");
    expect(run.stderr).not.toMatch(/INTERNAL|a bug in steplog/);
  });
});
