import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawnNode, type ChildOptions, type ChildOutcome, type ChildRun } from "./child.js";

const WORKER = fileURLToPath(new URL("../crash/fixtures/worker.mjs", import.meta.url));

export interface WorkerOutcome extends ChildOutcome {
  /** The last JSON line the worker printed: { result } or { refused }, with { ms } under REPORT_MS. */
  report: { result?: Record<string, any>; refused?: { code: string; message: string }; ms?: number } | undefined;
}

export interface WorkerRun extends ChildRun {
  done: Promise<WorkerOutcome>;
}

/** Run the crash-suite worker as a real child process. */
/** `child.under`: a command to run the worker under (faketime, unshare); `child.runtime`: another runtime to run it with (runtimes.ts). */
export function spawnWorker(
  file: string,
  runId: string,
  mode: "start" | "continue" | "compensate",
  env: Record<string, string> = {},
  options?: object,
  child: Pick<ChildOptions, "under" | "runtime"> = {},
): WorkerRun {
  const args = [file, runId, mode];
  if (options) args.push(JSON.stringify(options));
  return spawnNode(WORKER, args, { env: { STEPLOG_FAULT: "", ...env }, ...child });
}

export function runWorker(
  file: string,
  runId: string,
  mode: "start" | "continue" | "compensate",
  env: Record<string, string> = {},
  options?: object,
  child: Pick<ChildOptions, "under" | "runtime"> = {},
) {
  return spawnWorker(file, runId, mode, env, options, child).done;
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
  return fs
    .readFileSync(ledger, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

export const distBuilt = () => fs.existsSync(path.join(fileURLToPath(new URL("../../dist", import.meta.url)), "index.js"));
