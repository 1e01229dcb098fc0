/**
 * `import "steplog"` loads only what every app needs: croner (schedules), proper-lockfile (the
 * JSONL store's lock), pg (the Postgres store) and ulid are loaded when the feature that needs
 * them is first used, and each still works then. Each case is a fresh process importing the
 * built package (dist/: run `npm run build` first when calling vitest directly) by its name,
 * in both its ES module and its CommonJS build, recording every package it resolves.
 */

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { spawnNode } from "../helpers/child.js";
import { PG_URL, pgSchema } from "../helpers/pg.js";
import { tmpDir } from "../helpers/tmp.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PROBE = fileURLToPath(new URL("./fixtures/import-probe.mjs", import.meta.url));
const WITHOUT_PACKAGES = fileURLToPath(new URL("./fixtures/without-packages.mjs", import.meta.url));
const RECORDER = pathToFileURL(fileURLToPath(new URL("./fixtures/record-imports.mjs", import.meta.url))).href;

/** Loaded on first use, never by an import of steplog or of a store's entry. */
const ON_DEMAND = ["better-sqlite3", "croner", "proper-lockfile", "graceful-fs", "pg", "ulid"];

interface Report {
  atImport: string[];
  builtinsAtImport: string[];
  builtinsAfterImport: string[];
  atEntry?: string[];
  afterUse: string[];
  result?: { status: string; value: unknown };
  refused?: { code: string; message: string };
}

async function probe(format: "esm" | "cjs", use: string, env: Record<string, string> = {}): Promise<Report> {
  const dir = tmpDir();
  const record = path.join(dir, "imports.txt");
  fs.writeFileSync(record, "");
  const outcome = await spawnNode(PROBE, [format, use, dir], {
    env: { ...env, RECORD_IMPORTS: record, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${RECORDER}`.trim() },
  }).done;
  expect(outcome.code, outcome.stderr).toBe(0);
  return outcome.report as Report;
}

const loadedOnDemand = (packages: string[]) => packages.filter((name) => ON_DEMAND.includes(name));

describe.each(["esm", "cjs"] as const)("the %s build", (format) => {
  it('import "steplog" loads none of better-sqlite3, croner, proper-lockfile, pg, ulid, node:sqlite, node:crypto, node:worker_threads, the ES module node:util; a run on the memory store needs none of the packages either', async () => {
    const report = await probe(format, "start");
    expect(loadedOnDemand(report.atImport)).toEqual([]);
    // Node's own modules that only encryptedCodec and an attempt's owner need.
    expect(report.builtinsAtImport).not.toContain("crypto");
    expect(report.builtinsAtImport).not.toContain("worker_threads");
    // No SQLite driver: the store loads one when it first opens its file.
    expect(report.builtinsAtImport).not.toContain("sqlite");
    // Nor the ES module form of node:util, whose lazy properties (parseArgs among them) it would read.
    expect(report.builtinsAtImport).not.toContain("internal/util/parse_args/parse_args");
    expect(report.builtinsAfterImport).toContain("os"); // the list is read: the owner row needs the host name
    expect(report.result).toEqual({ status: "completed", value: "done" });
    expect(loadedOnDemand(report.afterUse)).toEqual([]);
  });

  it("a schedule loads croner when it is defined, and croner reads its pattern", async () => {
    const report = await probe(format, "schedule");
    expect(report.atImport).not.toContain("croner");
    // Also shows the recording sees a package loaded on demand (a probe that saw none would pass the others).
    expect(report.afterUse).toContain("croner");
    expect(report.refused?.code).toBe("INVALID_OPTION");
    expect(report.refused?.message).toMatch(/"61 \* \* \* \*" is not a cron pattern steplog reads: .*minute/);
  });

  it("a JSONL store loads proper-lockfile when it opens, not when steplog/jsonl is imported", async () => {
    const report = await probe(format, "jsonl");
    expect(loadedOnDemand(report.atImport)).toEqual([]);
    expect(loadedOnDemand(report.atEntry!)).toEqual([]);
    expect(report.result).toEqual({ status: "completed", value: "done" });
    expect(report.afterUse).toContain("proper-lockfile");
  });

  it.skipIf(!PG_URL)("a Postgres store loads pg when it opens, not when steplog/postgres is imported", async () => {
    const report = await probe(format, "postgres", { STEPLOG_PG_URL: PG_URL!, PG_SCHEMA: pgSchema() });
    expect(loadedOnDemand(report.atImport)).toEqual([]);
    expect(loadedOnDemand(report.atEntry!)).toEqual([]);
    expect(report.result).toEqual({ status: "completed", value: "done" });
    expect(report.afterUse).toContain("pg");
  });
});

describe("an app installed without croner and proper-lockfile (a bundle that left them out)", () => {
  it("imports steplog; a schedule is refused with INVALID_OPTION and a JSONL store with STORE_DRIVER_FAILED, each naming the package", async () => {
    // The app's node_modules: this build of steplog, and better-sqlite3 (the SQLite store's driver).
    const app = tmpDir();
    const modules = path.join(app, "node_modules");
    fs.mkdirSync(path.join(modules, "steplog"), { recursive: true });
    fs.cpSync(path.join(ROOT, "dist"), path.join(modules, "steplog", "dist"), { recursive: true });
    fs.copyFileSync(path.join(ROOT, "package.json"), path.join(modules, "steplog", "package.json"));
    fs.symlinkSync(path.join(ROOT, "node_modules", "better-sqlite3"), path.join(modules, "better-sqlite3"));
    fs.copyFileSync(WITHOUT_PACKAGES, path.join(app, "main.mjs"));
    const outcome = await spawnNode(path.join(app, "main.mjs"), [path.join(app, "runs.jsonl")], { cwd: app }).done;
    expect(outcome.code, outcome.stderr).toBe(0);
    const { schedule, jsonl } = outcome.report;
    expect(schedule).toMatchObject({ name: "InvalidOptionError", code: "INVALID_OPTION" });
    expect(schedule.message).toMatch(
      /schedule cannot be read: .*the croner package, which could not be loaded \(Cannot find module 'croner'.*reinstall \(npm install\)/,
    );
    expect(jsonl).toMatchObject({ name: "StoreDriverFailedError", code: "STORE_DRIVER_FAILED" });
    expect(jsonl.message).toMatch(
      /jsonl store at .*runs\.jsonl could not be opened: the proper-lockfile package failed to load \(Cannot find module 'proper-lockfile'.*reinstall \(npm install\)/,
    );
  });
});
