// Real child processes for the tests that need them (crash tests, examples): spawn a Node
// script, collect what it prints, and know when it is ready and when it ended. A test that
// fails half-way must not leave its children running (one waiting on a barrier spins), so
// every child still alive when its test file ends is killed.
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll } from "vitest";

const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
});

export interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** How long the child lived, in ms. */
  ms: number;
  /** The last line of stdout that is a JSON object, parsed (the scripts' reports). */
  report: any;
}

export interface ChildRun {
  child: ChildProcess;
  /** Resolves when the child printed a line "ready". */
  ready: Promise<void>;
  done: Promise<ChildOutcome>;
  /** Everything printed so far, stdout then stderr. */
  output: () => string;
}

export interface ChildOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** Told of every piece of stdout, with all of it so far. */
  onStdout?: (stdout: string, child: ChildProcess) => void;
  /** A command to run Node under, e.g. ["unshare", "--pid", "--fork"]. */
  under?: string[];
  /** The runtime to run the script with, instead of this Node.js (see runtimes.ts: another Node.js, Bun, Deno). */
  runtime?: string[];
}

export function spawnNode(script: string, args: string[] = [], options: ChildOptions = {}): ChildRun {
  const started = Date.now();
  const [command, ...commandArgs] = [...(options.under ?? []), ...(options.runtime ?? [process.execPath]), script, ...args];
  const child = spawn(command!, commandArgs, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    if (stdout.includes("ready\n")) markReady();
    options.onStdout?.(stdout, child);
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const done = new Promise<ChildOutcome>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const last = stdout
        .trim()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .at(-1);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, report: last ? JSON.parse(last) : undefined });
    });
  });
  return { child, ready, done, output: () => `${stdout}${stderr}` };
}
