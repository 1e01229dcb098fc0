// `--driver`: every command that opens a SQLite store takes the driver sqliteStore({ driver })
// takes, through the built bin. A value that is not a driver, or a driver for a store that is not
// SQLite, is a usage error listing the choices; a driver this runtime has not is
// STORE_DRIVER_FAILED before anything is made; node:sqlite runs a workflow under Node.js 24 (from
// the runtimes cache: helpers/runtimes.ts), and the file it wrote is read by better-sqlite3.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { needRuntime, RUNTIMES_CACHE, runtimeCommand, skipWithout } from "../helpers/runtimes.js";
import { canLoad } from "../helpers/sqlite-driver.js";
import { assertBuilt, BIN, childEnv, cli, collect, example, TempDirs } from "./helpers.js";
import { spawn } from "node:child_process";

const dirs = new TempDirs();
beforeAll(assertBuilt);
afterEach(() => dirs.cleanup());

const HELLO = ["run", example("hello.mjs"), "--id", "h1"];
const TOPIC = ["--", '{"topic":"drivers"}'];

/** `steplog …args` under Node.js 24. */
function cliOnNode24(args: string[], cwd: string) {
  const [node24] = needRuntime("node24");
  return collect(spawn(node24!, [BIN, ...args], { cwd, env: childEnv(), stdio: ["ignore", "pipe", "pipe"] }), 30_000, `(Node.js 24) steplog ${args.join(" ")}`);
}

describe("steplog --driver", () => {
  it("a value that is not a driver: a usage error (exit 2) listing the four choices; nothing is made", async () => {
    const cwd = dirs.make();
    for (const args of [
      [...HELLO, "--driver", "sqlite3", ...TOPIC],
      ["runs", "--driver", "Node:SQLite"],
    ]) {
      const r = await cli(args, { cwd });
      expect(r.code, r.output).toBe(2);
      expect(r.stderr, r.output).toContain(`is not a SQLite driver: give one of auto, better-sqlite3, node:sqlite, bun:sqlite.`);
    }
    const json = await cli(["runs", "--driver", "", "--json"], { cwd });
    expect(json.code, json.output).toBe(2);
    expect(json.json().error).toMatchObject({ code: "USAGE", message: expect.stringContaining("auto, better-sqlite3, node:sqlite, bun:sqlite") });
    expect(fs.existsSync(path.join(cwd, ".steplog"))).toBe(false);
  });

  it("with a store that is not SQLite (JSONL, Postgres): a usage error, nothing opened", async () => {
    const cwd = dirs.make();
    const jsonl = await cli(["runs", "--store", "jsonl:runs.jsonl", "--driver", "node:sqlite"], { cwd });
    expect(jsonl.code, jsonl.output).toBe(2);
    expect(jsonl.stderr).toContain("--driver names a SQLite driver, and the store here is a JSONL file.");
    const pg = await cli(["runs", "--store", "postgres://nobody@127.0.0.1:1/none", "--driver", "auto"], { cwd });
    expect(pg.code, pg.output).toBe(2);
    expect(pg.stderr).toContain("--driver names a SQLite driver, and the store here is Postgres.");
    expect(fs.existsSync(path.join(cwd, "runs.jsonl"))).toBe(false);
  });

  it("bun:sqlite on Node.js: STORE_DRIVER_FAILED (exit 5) naming the driver; no store file is made", async () => {
    const cwd = dirs.make();
    const r = await cli([...HELLO, "--driver", "bun:sqlite", "--json", ...TOPIC], { cwd });
    expect(r.code, r.output).toBe(5);
    expect(r.json().error).toMatchObject({ code: "STORE_DRIVER_FAILED", message: expect.stringContaining(`asked for driver "bun:sqlite" only`) });
    expect(fs.existsSync(path.join(cwd, ".steplog", "steplog.db"))).toBe(false);
  });

  it.runIf(!canLoad("node:sqlite"))(
    "node:sqlite on a Node.js without it (20): STORE_DRIVER_FAILED saying it needs Node.js 22.16; no store file is made",
    async () => {
      const cwd = dirs.make();
      const r = await cli([...HELLO, "--driver", "node:sqlite", ...TOPIC], { cwd });
      expect(r.code, r.output).toBe(5);
      expect(r.stderr).toContain("STORE_DRIVER_FAILED");
      expect(r.stderr).toContain("node:sqlite failed to load");
      expect(r.stderr).toContain("Node.js 22.16");
      expect(fs.existsSync(path.join(cwd, ".steplog", "steplog.db"))).toBe(false);
    },
  );

  it.skipIf(skipWithout("node24"))(
    `node:sqlite under Node.js 24: run and show on it; the file it wrote is read by --driver better-sqlite3 where that loads${runtimeCommand("node24") ? "" : ` (node24 is not in ${RUNTIMES_CACHE})`}`,
    async () => {
      const cwd = dirs.make();
      const ran = await cliOnNode24([...HELLO, "--driver", "node:sqlite", ...TOPIC], cwd);
      expect(ran.code, ran.output).toBe(0);
      expect(ran.stdout).toMatch(/^✓ attempt 1 completed$/m);
      const shown = await cliOnNode24(["show", "h1", "--driver", "node:sqlite", "--json"], cwd);
      expect(shown.code, shown.output).toBe(0);
      expect(shown.json()).toMatchObject({ id: "h1", status: "completed" });
      if (canLoad("better-sqlite3")) {
        const again = await cli(["runs", "--driver", "better-sqlite3", "--json"], { cwd });
        expect(again.code, again.output).toBe(0);
        expect(again.json().map((run: { id: string; status: string }) => `${run.id}:${run.status}`)).toEqual(["h1:completed"]);
      }
    },
  );
});
