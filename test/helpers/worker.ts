import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

const WORKER = fileURLToPath(new URL("../crash/fixtures/worker.mjs", import.meta.url));

// A test that fails half-way must not leave its workers running (one waiting on a barrier spins).
const children = new Set<ReturnType<typeof spawn>>();
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
});

export interface WorkerOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The last JSON line the worker printed: { result } or { refused }. */
  report: { result?: Record<string, any>; refused?: { code: string; message: string } } | undefined;
}

export interface WorkerRun {
  child: ReturnType<typeof spawn>;
  done: Promise<WorkerOutcome>;
  /** Resolves when the worker printed "ready" (its engine exists). */
  ready: Promise<void>;
}

/** Run the crash-suite worker as a real child process. */
export function spawnWorker(file: string, runId: string, mode: "start" | "continue" | "compensate", env: Record<string, string> = {}, options?: object): WorkerRun {
  const args = [WORKER, file, runId, mode];
  if (options) args.push(JSON.stringify(options));
  const child = spawn(process.execPath, args, { env: { ...process.env, STEPLOG_FAULT: "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  let stdout = "";
  let stderr = "";
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout!.on("data", (chunk) => {
    stdout += chunk;
    if (stdout.includes("ready\n")) markReady();
  });
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const done = new Promise<WorkerOutcome>((resolve) => {
    child.on("close", (code, signal) => {
      const last = stdout.trim().split("\n").filter((l) => l.startsWith("{")).at(-1);
      resolve({ code, signal, stdout, stderr, report: last ? JSON.parse(last) : undefined });
    });
  });
  return { child, done, ready };
}

export function runWorker(file: string, runId: string, mode: "start" | "continue" | "compensate", env: Record<string, string> = {}, options?: object) {
  return spawnWorker(file, runId, mode, env, options).done;
}

export interface LedgerEntry {
  kind: "effect" | "query" | "compensate";
  step: string;
  idempotencyKey: string;
  attempt?: number;
  pid: number;
  previous?: { attempt: number; intendedAt: string; idempotencyKey: string } | null;
}

export function readLedger(file: string): LedgerEntry[] {
  const ledger = `${file}.ledger`;
  if (!fs.existsSync(ledger)) return [];
  return fs.readFileSync(ledger, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

export const distBuilt = () => fs.existsSync(path.join(fileURLToPath(new URL("../../dist", import.meta.url)), "index.js"));
