/**
 * Spawning the BUILT bin (`node dist/cli.js …`; the npm `pretest` script builds dist) in temp
 * dirs, each with its own store, and reading its --json output and exit code.
 */

import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = path.join(ROOT, "dist", "cli.js");
export const EXAMPLES = path.join(ROOT, "examples", "cli");
export const DIST_INDEX = path.join(ROOT, "dist", "index.js");

export function example(name: string): string {
  return path.join(EXAMPLES, name);
}

export function assertBuilt(): void {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first (npm test does it for you).`);
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for --json). */
  json<T = any>(): T;
  /** Everything, for assertion messages. */
  output: string;
}

/** The child's environment: this one's, without colour switches or the test runner's NODE_OPTIONS. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of ["NO_COLOR", "FORCE_COLOR", "NODE_OPTIONS", "STEPLOG_DB", "STEPLOG_STORE", "VITEST", "VITEST_WORKER_ID", "VITEST_POOL_ID"]) delete env[key];
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface SpawnOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
}

export function spawnCli(args: string[], options: SpawnOptions): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: childEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
}

export function collect(child: ChildProcess, timeoutMs = 30_000, label = "steplog"): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${label} did not finish within ${timeoutMs} ms\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const output = `$ ${label}\n(exit ${code}${signal ? `, ${signal}` : ""})\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
      resolve({
        code,
        signal,
        stdout,
        stderr,
        output,
        json() {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`stdout is not JSON:\n${output}`);
          }
        },
      });
    });
  });
}

/** Run `steplog …args` to the end. */
export function cli(args: string[], options: SpawnOptions): Promise<CliResult> {
  return collect(spawnCli(args, options), options.timeoutMs ?? 30_000, `steplog ${args.join(" ")}`);
}

/** A temp dir per test, removed afterwards. */
export class TempDirs {
  readonly #dirs: string[] = [];
  make(prefix = "steplog-cli-"): string {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
    this.#dirs.push(dir);
    return dir;
  }
  cleanup(): void {
    for (const dir of this.#dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Write a workflow file into `dir` that imports steplog from this repo's build by absolute path. */
export function writeWorkflow(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `import { defineWorkflow } from ${JSON.stringify(DIST_INDEX)};\n${body}\n`);
  return file;
}

/** Wait until `predicate(stdout)` holds for a running child. */
export function waitForOutput(child: ChildProcess, predicate: (text: string) => boolean, timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error(`output never matched within ${timeoutMs} ms:\n${text}`)), timeoutMs);
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      if (predicate(text)) {
        clearTimeout(timer);
        child.stdout!.off("data", onData);
        resolve(text);
      }
    };
    child.stdout!.on("data", onData);
  });
}
