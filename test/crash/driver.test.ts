// A store driver that cannot load (better-sqlite3's native module built for another Node.js, or
// not built) is named for what it is: STORE_DRIVER_FAILED naming each driver tried and the fix,
// never "restore the store from a backup". A real child process whose dlopen of the module fails.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { BIN, example } from "../cli/helpers.js";
import { spawnNode } from "../helpers/child.js";
import { canLoad } from "../helpers/sqlite-driver.js";
import { tmpDb } from "../helpers/tmp.js";
import { runWorker } from "../helpers/worker.js";

const PRELOAD = fileURLToPath(new URL("./fixtures/no-native-sqlite.cjs", import.meta.url));
const WORKER = fileURLToPath(new URL("./fixtures/worker.mjs", import.meta.url));
/** This Node.js has no built-in SQLite steplog can use (Node.js 20): "auto" has nothing to fall back to. */
const noBuiltIn = !canLoad("node:sqlite");

describe("a SQLite driver that cannot load", () => {
  it('driver "better-sqlite3", start and continue: STORE_DRIVER_FAILED naming npm rebuild better-sqlite3 and this Node.js; the store file untouched', async () => {
    const file = tmpDb();
    expect((await runWorker(file, "r", "start", { CRASH_IN_EFFECT: "two" })).signal).toBe("SIGKILL");
    const before = fs.readFileSync(file);
    for (const mode of ["continue", "start"]) {
      const run = spawnNode(WORKER, [file, mode === "start" ? "s" : "r", mode], {
        env: { NODE_OPTIONS: `--require ${PRELOAD}`, STEPLOG_FAULT: "", SQLITE_DRIVER: "better-sqlite3" },
      });
      const done = await run.done;
      expect(done.report?.refused, done.stdout + done.stderr).toMatchObject({ code: "STORE_DRIVER_FAILED" });
      const message = done.report!.refused!.message;
      expect(message).toContain("better-sqlite3's native module failed to load (The module");
      expect(message).toContain("npm rebuild better-sqlite3");
      expect(message).toContain(`Node.js ${process.version}`);
      expect(message).toContain(`with driver "auto" it uses the runtime's built-in SQLite`);
      expect(message).not.toMatch(/backup|point the engine/i);
    }
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it.skipIf(!noBuiltIn)('"auto" on a Node.js without node:sqlite (20): names both drivers, why each failed, and both ways out', async () => {
    const file = tmpDb();
    const done = await spawnNode(WORKER, [file, "r", "start"], { env: { NODE_OPTIONS: `--require ${PRELOAD}`, STEPLOG_FAULT: "" } }).done;
    expect(done.report?.refused, done.stdout + done.stderr).toMatchObject({ code: "STORE_DRIVER_FAILED" });
    const message = done.report!.refused!.message;
    expect(message).toContain("better-sqlite3's native module failed to load (The module");
    expect(message).toContain(`node:sqlite failed to load (Node.js ${process.version} has none; it came with Node.js 22.5)`);
    expect(message).toMatch(/npm rebuild better-sqlite3 .*; or run on Node\.js 22\.16 or later .*node:sqlite needs nothing installed\./);
    expect(message).not.toMatch(/backup|point the engine/i);
  });

  it.skipIf(!noBuiltIn)("the steplog command exits 5 with the code and the fix", async () => {
    const file = tmpDb();
    const run = spawnNode(BIN, ["run", example("hello.mjs"), "--db", file, "--", '{"topic":"x"}'], {
      env: { NODE_OPTIONS: `--require ${PRELOAD}` },
      cwd: path.dirname(file),
    });
    const done = await run.done;
    expect(done.code, done.stderr).toBe(5);
    expect(done.stderr).toContain("STORE_DRIVER_FAILED");
    expect(done.stderr).toContain("npm rebuild better-sqlite3");
    expect(done.stderr).not.toMatch(/INTERNAL|a bug in steplog/);
  });
});
