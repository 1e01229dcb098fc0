/**
 * What users get: `npm pack` the repo, install the tarball into a scratch project in a temp
 * dir, then use it from outside the repo: import every entry point from ESM and CJS, run a
 * workflow through the installed package, and type-check a consumer against its .d.ts/.d.cts.
 *
 * Uses dist/ as built by the npm `pretest` script (run `npm run build` first when calling
 * vitest directly). The install runs no scripts, so better-sqlite3 is not compiled again: its
 * native addon is copied from this repo's node_modules (same pinned version, same Node).
 */

import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entries } from "../../tsup.config.js";

const execFileAsync = promisify(execFile);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
const NATIVE_REL = path.join("build", "Release", "better_sqlite3.node");
const REPO_SQLITE = path.join(ROOT, "node_modules", "better-sqlite3");

const SUBPATHS = Object.keys(entries).map((name) => (name === "index" ? "steplog" : `steplog/${name}`));
const STEP_TIMEOUT = 60_000;

const pkg = readJson(path.join(ROOT, "package.json")) as {
  name: string;
  version: string;
  exports: Record<string, string | Record<string, Record<string, string>>>;
};

function readJson(file: string): any {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

/**
 * The environment for child processes: this one's, minus what `npm test` / `npx` add about
 * this repo (npm_package_*, npm_lifecycle_*, the local prefix, INIT_CWD), so the scratch
 * install cannot mistake the repo for its project, and minus NODE_OPTIONS from the runner.
 */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_(package_|lifecycle_|command$|config_(local_prefix|prefix|global_prefix)$)/i.test(key)) continue;
    if (key === "INIT_CWD" || key === "NODE_OPTIONS") continue;
    env[key] = value;
  }
  env.NO_UPDATE_NOTIFIER = "1";
  return env;
}

async function run(command: string, args: string[], cwd: string, timeout = STEP_TIMEOUT): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, { cwd, env: childEnv(), timeout, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { code?: unknown; signal?: unknown; stdout?: string; stderr?: string };
    // Drop bare absolute paths (tsc --listFiles) so the diagnostics stay readable.
    const stdout = (e.stdout ?? "")
      .split("\n")
      .filter((line) => !/^\/\S+$/.test(line.trim()))
      .join("\n");
    throw new Error(
      `${path.basename(command)} ${args.join(" ")} (in ${cwd}) failed (exit ${String(e.code)}${e.signal ? `, ${String(e.signal)}` : ""})` +
        `\n--- stdout ---\n${stdout}\n--- stderr ---\n${e.stderr ?? ""}`,
    );
  }
}

/** Run a script with node in the scratch project; it prints one JSON line last. */
async function node(file: string): Promise<any> {
  const stdout = await run(process.execPath, [file], project);
  const last = stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last);
  } catch {
    throw new Error(`node ${file} printed no JSON result:\n${stdout}`);
  }
}

let work = "";
let project = "";
let tarballFiles: string[] = [];
/** The tarball's size and its files' total, in bytes, as npm pack --json reports them. */
let packedSize = { size: 0, unpackedSize: 0 };
let sqliteUsable = false;

// ---------------------------------------------------------------------------------------------
// Scripts run in the scratch project. One body per check, with a header that defines
// load/resolve for the module system under test, so ESM and CJS run the same code.

const HEADERS = {
  esm: `import path from "node:path";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
const load = (name) => import(name);
const resolve = (name) => fileURLToPath(import.meta.resolve(name));
const main = async () => {
`,
  cjs: `"use strict";
const path = require("node:path");
const fs = require("node:fs");
const load = async (name) => require(name);
const resolve = (name) => require.resolve(name);
const main = async () => {
`,
};
const FOOTER = `};
main().then(
  (result) => console.log(JSON.stringify(result)),
  (error) => { console.error(error); process.exit(1); },
);
`;

const BODIES = {
  exports: `
  const out = { entries: {}, resolved: {}, packageJson: null, deep: null };
  for (const name of ${JSON.stringify(SUBPATHS)}) {
    const mod = await load(name);
    out.entries[name] = Object.fromEntries(Object.keys(mod).sort().map((key) => [key, typeof mod[key]]));
    out.resolved[name] = path.relative(process.cwd(), resolve(name)).split(path.sep).join("/");
  }
  out.packageJson = JSON.parse(fs.readFileSync(resolve("steplog/package.json"), "utf8")).version;
  try {
    await load("steplog/dist/index.js");
    out.deep = "loaded";
  } catch (error) {
    out.deep = error.code;
  }
  return out;
`,
  memory: `
  const { defineWorkflow, createEngine, isSteplogError, SteplogError } = await load("steplog");
  const { memoryStore } = await load("steplog/memory");
  const { testWorkflow } = await load("steplog/testing");
  const { z } = await load("zod");
  const double = defineWorkflow({
    name: "double",
    args: z.object({ n: z.number() }),
    async run(ctx, args) {
      const doubled = await ctx.step("double", async () => args.n * 2);
      const label = await ctx.step("label", async () => args.n + " -> " + doubled);
      return { doubled, label };
    },
  });
  const engine = createEngine({ store: memoryStore(), workflows: [double] });
  const result = await engine.start(double, { n: 21 }, { id: "run-1" });
  let rejected = "accepted";
  try {
    await engine.start(double, { n: "21" });
  } catch (error) {
    rejected = { code: error.code, isSteplogError: isSteplogError(error), instanceOf: error instanceof SteplogError };
  }
  const view = await engine.get("run-1");
  await engine.close();
  const tested = await testWorkflow(double, { args: { n: 5 }, earlier: { steps: { double: 100 } } });
  return {
    result: { status: result.status, runStatus: result.runStatus, value: result.value, attempt: result.attempt },
    rejected,
    view: { status: view.status, steps: view.steps.map((step) => [step.key, step.status, step.value]) },
    tested: { status: tested.status, value: tested.value, ran: tested.ran, reused: tested.reused },
  };
`,
  sqlite: `
  const { defineWorkflow, createEngine } = await load("steplog");
  const { sqliteStore } = await load("steplog/sqlite");
  const greet = defineWorkflow({
    name: "greet",
    async run(ctx, args) {
      const text = await ctx.step("greet", async () => "hello " + args.who);
      return { text };
    },
  });
  const file = path.join(process.cwd(), "data", process.argv[1].endsWith(".cjs") ? "cjs.db" : "esm.db");
  fs.rmSync(file, { force: true });
  const first = createEngine({ store: sqliteStore({ path: file }), workflows: [greet] });
  const result = await first.start(greet, { who: "sqlite" }, { id: "run-1" });
  await first.close();
  // A second engine on the same file reads the run back: it was really written to disk.
  const second = createEngine({ store: sqliteStore({ path: file }), workflows: [greet] });
  const view = await second.get("run-1");
  await second.close();
  return {
    exists: fs.existsSync(file),
    result: { status: result.status, value: result.value },
    reread: { status: view.status, value: view.value, steps: view.steps.map((step) => [step.key, step.status, step.value]) },
  };
`,
};

function writeScripts(): void {
  for (const [format, header] of Object.entries(HEADERS)) {
    const ext = format === "esm" ? "mjs" : "cjs";
    for (const [name, body] of Object.entries(BODIES)) fs.writeFileSync(path.join(project, `${name}.${ext}`), header + body + FOOTER);
  }
}

// ---------------------------------------------------------------------------------------------
// The type-checked consumer: ESM (consumer.ts in a "type": "module" project) and CJS
// (consumer.cts), one tsc run, NodeNext + strict, the installed .d.ts/.d.cts checked too.

const CONSUMER_BODY = `
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const double = defineWorkflow({
  name: "double",
  args: z.object({ n: z.number() }),
  async run(ctx, args) {
    // The args the code sees are the schema's output, not any.
    const seen: Equals<typeof args, { n: number }> = true;
    void seen;
    const doubled = await ctx.step("double", async () => args.n * 2);
    return { doubled };
  },
});

export async function main(): Promise<number> {
  const argsType: Equals<WorkflowArgs<typeof double>, { n: number }> = true;
  const engine = createEngine({ store: memoryStore(), workflows: [double] });
  const result = await engine.start(double, { n: 21 });
  const valueType: Equals<typeof result.value, { doubled: number } | undefined> = true;
  const resultType: Equals<typeof result, RunResult<{ doubled: number }>> = true;
  // @ts-expect-error n must be a number
  await engine.start(double, { n: "21" });
  // @ts-expect-error n is required
  await engine.start(double, {});
  const tested = await testWorkflow(double, { args: { n: 1 }, earlier: { steps: { double: 2 } } });
  const ran: string[] = tested.ran;
  // @ts-expect-error testWorkflow takes the workflow's args too
  await testWorkflow(double, { args: { n: "1" } });
  const store: Store = sqliteStore({ path: "steplog.db", durability: "process" });
  // @ts-expect-error durability is "power" | "process"
  sqliteStore({ durability: "sometimes" });
  const caught: unknown = new Error("not ours");
  if (isSteplogError(caught)) {
    const code: string = caught.code;
    void code;
  }
  const known: SteplogError["code"] = "ARGS_REJECTED";
  // @ts-expect-error an error code is one of the known codes, not any string
  const unknownCode: SteplogError["code"] = "NOT_A_CODE";
  // steplog/agents: durableTools keeps the tools' shape; messagesFromSteps reads a run view.
  const agent = defineWorkflow({
    name: "agent",
    async run(ctx) {
      const tools = durableTools(ctx, { add: (input: { a: number; b: number }) => input.a + input.b });
      const sum: unknown = await tools.add({ a: 1, b: 2 });
      return sum;
    },
  });
  const history: OpenAIMessage[] = messagesFromSteps(await engine.get((await engine.start(agent, undefined)).id));
  void [argsType, valueType, resultType, ran, store, known, unknownCode, history];
  await engine.close();
  return result.value?.doubled ?? 0;
}
`;

const CONSUMER_IMPORTS = `import { z } from "zod";
import { createEngine, defineWorkflow, isSteplogError, SteplogError, type RunResult, type Store, type WorkflowArgs } from "steplog";
import { memoryStore } from "steplog/memory";
import { sqliteStore } from "steplog/sqlite";
import { testWorkflow } from "steplog/testing";
import { durableTools, messagesFromSteps, type OpenAIMessage } from "steplog/agents";
import type {} from "steplog/postgres";
import type {} from "steplog/jsonl";
`;

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  for (const name of Object.keys(entries)) {
    if (!fs.existsSync(path.join(ROOT, "dist", `${name}.js`))) throw new Error(`dist/${name}.js is missing: run npm run build first (npm test does).`);
  }
  work = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-pack-"));
  const packDir = path.join(work, "pack");
  project = path.join(work, "consumer");
  fs.mkdirSync(packDir);
  fs.mkdirSync(path.join(project, "data"), { recursive: true });

  // Pack without lifecycle scripts: dist is already built, and a build here would race others.
  const packed = JSON.parse(await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", packDir], ROOT)) as Array<{
    filename: string;
    size: number;
    unpackedSize: number;
    files: Array<{ path: string }>;
  }>;
  packedSize = { size: packed[0]!.size, unpackedSize: packed[0]!.unpackedSize };
  const tarball = path.join(packDir, packed[0]!.filename);
  tarballFiles = packed[0]!.files.map((file) => file.path);

  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "steplog-consumer", version: "0.0.0", private: true, type: "module" }, null, 2));
  // zod for the consumer's own schemas, at the version this repo tests with (whether or not
  // steplog depends on it). No scripts: better-sqlite3 must not compile again.
  const zodVersion = readJson(path.join(ROOT, "node_modules", "zod", "package.json")).version as string;
  await run("npm", ["install", tarball, `zod@${zodVersion}`, "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], project);

  // The native addon, from this repo's build of the same better-sqlite3 version.
  const installedSqlite = path.join(project, "node_modules", "better-sqlite3");
  const native = path.join(REPO_SQLITE, NATIVE_REL);
  if (
    fs.existsSync(native) &&
    fs.existsSync(path.join(installedSqlite, "package.json")) &&
    readJson(path.join(installedSqlite, "package.json")).version === readJson(path.join(REPO_SQLITE, "package.json")).version
  ) {
    fs.mkdirSync(path.join(installedSqlite, "build", "Release"), { recursive: true });
    fs.copyFileSync(native, path.join(installedSqlite, NATIVE_REL));
    sqliteUsable = true;
  }

  writeScripts();
  fs.writeFileSync(path.join(project, "consumer.ts"), CONSUMER_IMPORTS + CONSUMER_BODY);
  fs.writeFileSync(path.join(project, "consumer.cts"), CONSUMER_IMPORTS + CONSUMER_BODY);
  fs.writeFileSync(
    path.join(project, "tsconfig.json"),
    JSON.stringify(
      {
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          lib: ["ES2023"],
          strict: true,
          noEmit: true,
          // Check the installed declaration files too: a broken .d.ts must not pass as any.
          skipLibCheck: false,
          // A Node app has @types/node (steplog's types use AbortSignal); take the repo's.
          types: ["node"],
          typeRoots: [path.join(ROOT, "node_modules", "@types")],
        },
        files: ["consumer.ts", "consumer.cts"],
      },
      null,
      2,
    ),
  );
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe("npm pack", () => {
  it("packs package.json and dist, including every file the exports map names, and no sources", () => {
    expect(tarballFiles).toContain("package.json");
    const named = Object.values(pkg.exports).flatMap((value) =>
      typeof value === "string" ? [value] : Object.values(value).flatMap((leaf) => Object.values(leaf)),
    );
    for (const file of named) expect(tarballFiles, file).toContain(file.replace(/^\.\//, ""));
    expect(tarballFiles.filter((file) => /^(src|test|bench|examples|node_modules)\//.test(file))).toEqual([]);
    // The command is the ES module package.json's bin names; its CommonJS twin is not shipped.
    expect(tarballFiles).toContain("dist/cli.js");
    expect(tarballFiles.filter((file) => file.startsWith("dist/cli.cjs"))).toEqual([]);
  });

  // Unpacked, 2.8 of 5 MB are source maps (the ES module and CommonJS builds each have theirs); the
  // three SQLite drivers, listing by cursor and the rest of this round took it just past 5 MB;
  // streams, retention and budgets (issue 43) and Claude Agent SDK sessions (issue 42): 1.65 MB packed, 6.17 MB unpacked.
  it("stays small: under 1.8 MB packed and 6.6 MB unpacked (sources maps included)", () => {
    console.log(
      `steplog package: ${(packedSize.size / 1e6).toFixed(2)} MB packed, ${(packedSize.unpackedSize / 1e6).toFixed(2)} MB unpacked, ${tarballFiles.length} files`,
    );
    expect(packedSize.size).toBeGreaterThan(0);
    expect(packedSize.size).toBeLessThan(1_800_000);
    expect(packedSize.unpackedSize).toBeLessThan(6_600_000);
  });

  it("the prepack build prints nothing on stdout, so npm pack --json prints JSON alone", async () => {
    const scripts = (readJson(path.join(ROOT, "package.json")) as { scripts: Record<string, string> }).scripts;
    expect(scripts.prepack).toBe("tsup --silent");
    // The same build, into a scratch folder (dist/ is what the other tests use).
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "steplog-prepack-"));
    try {
      const stdout = await run(path.join(ROOT, "node_modules", ".bin", "tsup"), ["--silent", "--out-dir", out, "--no-dts"], ROOT, 120_000);
      expect(stdout).toBe("");
      expect(fs.existsSync(path.join(out, "index.js"))).toBe(true);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});

describe.each(["esm", "cjs"] as const)("the installed package from %s", (format) => {
  const ext = format === "esm" ? "mjs" : "cjs";

  it(
    "loads every entry point with its named exports, from its own build",
    async () => {
      const out = await node(`exports.${ext}`);
      expect(out.entries["steplog"]).toMatchObject({
        defineWorkflow: "function",
        createEngine: "function",
        SteplogError: "function",
        isSteplogError: "function",
      });
      expect(out.entries["steplog/sqlite"]).toMatchObject({ sqliteStore: "function" });
      expect(out.entries["steplog/memory"]).toMatchObject({ memoryStore: "function" });
      expect(out.entries["steplog/testing"]).toMatchObject({ testWorkflow: "function" });
      expect(out.entries["steplog/agents"]).toMatchObject({
        durableTools: "function",
        durableModel: "function",
        modelTurn: "function",
        messagesFromSteps: "function",
      });
      // Each condition resolves to the installed package's file for this module system.
      const js = format === "esm" ? "js" : "cjs";
      expect(out.resolved).toEqual(
        Object.fromEntries(Object.keys(entries).map((name) => [name === "index" ? "steplog" : `steplog/${name}`, `node_modules/steplog/dist/${name}.${js}`])),
      );
      expect(out.packageJson).toBe(pkg.version);
      // The exports map is the whole public surface: deep paths are closed.
      expect(out.deep).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
    },
    STEP_TIMEOUT,
  );

  it(
    "runs a workflow on the memory store, rejects bad args, and tests it with testWorkflow",
    async () => {
      const out = await node(`memory.${ext}`);
      expect(out.result).toEqual({ status: "completed", runStatus: "completed", value: { doubled: 42, label: "21 -> 42" }, attempt: 1 });
      expect(out.rejected).toEqual({ code: "ARGS_REJECTED", isSteplogError: true, instanceOf: true });
      expect(out.view).toEqual({
        status: "completed",
        steps: [
          ["double", "succeeded", 42],
          ["label", "succeeded", "21 -> 42"],
        ],
      });
      expect(out.tested).toEqual({ status: "completed", value: { doubled: 100, label: "5 -> 100" }, ran: ["label"], reused: ["double"] });
    },
    STEP_TIMEOUT,
  );

  it(
    "runs a workflow on the SQLite store and reads it back from the file",
    async (context) => {
      if (!sqliteUsable) context.skip("better-sqlite3's native addon is not built in this repo's node_modules");
      const out = await node(`sqlite.${ext}`);
      expect(out).toEqual({
        exists: true,
        result: { status: "completed", value: { text: "hello sqlite" } },
        reread: { status: "completed", value: { text: "hello sqlite" }, steps: [["greet", "succeeded", "hello sqlite"]] },
      });
    },
    STEP_TIMEOUT,
  );
});

describe("the installed package's types", () => {
  it(
    "type-check a strict NodeNext consumer, ESM and CJS, and catch wrong args",
    async () => {
      // --listFiles: the program really holds the consumers and the installed declarations.
      const listed = (await run(process.execPath, [TSC, "-p", "tsconfig.json", "--listFiles"], project))
        .split("\n")
        .map((line) => path.relative(project, line.trim()).split(path.sep).join("/"));
      expect(listed).toContain("consumer.ts");
      expect(listed).toContain("consumer.cts");
      for (const name of Object.keys(entries)) {
        expect(listed, `${name}.d.ts`).toContain(`node_modules/steplog/dist/${name}.d.ts`);
        expect(listed, `${name}.d.cts`).toContain(`node_modules/steplog/dist/${name}.d.cts`);
      }
    },
    STEP_TIMEOUT,
  );
});
