/**
 * engine.work(): a loop that claims runs that are ready — an event arrived, a timer or a wait's
 * timeout is due, an approval was given, or an interrupted run whose workflow sets autoResume —
 * through the same lease as a continue, and runs them, up to `concurrency` at a time. It also
 * starts the run of each tick of its workflows' schedules (schedules.ts), in the same slots.
 * A free slot goes first to a run whose owner is gone (longest gone first: it was under way
 * before the rest came due), then to a tick, then to a due run (highest priority, oldest due).
 * Sends and approvals anywhere in this process wake it at once; otherwise it polls every
 * `pollMs` (sooner when a tick is due before). When its signal aborts (or the engine closes) it
 * stops claiming, lets the attempts it runs finish, and resolves.
 */

import { InvalidOptionError, isSteplogError } from "../base/errors.js";
import type { RunResult } from "../steps/attempt.js";
import type { RunListing, Store } from "../store/types.js";
import type { Schedule } from "../workflow/schedule.js";
import { Ticker, type DueTick } from "./schedules.js";

export interface WorkOptions {
  /** Attempts run at once. Default 1. */
  concurrency?: number;
  /** How often to look for ready runs when nothing wakes the worker, in ms. Default 1000. */
  pollMs?: number;
  /** Abort to stop: no new claims; running attempts finish; work() resolves. */
  signal?: AbortSignal;
  /**
   * Where each workflow's code lives (a file path, a package name), by workflow name: recorded
   * as the `source` of the runs this worker starts for schedules (start's `source`).
   */
  sources?: Record<string, string>;
}

export interface WorkSummary {
  /** Attempts this worker ran, with how each ended. */
  attempts: RunResult[];
}

export interface WorkerHost {
  store: Store;
  now(): number;
  /** The workflows this engine can run: a worker never claims a run of another. */
  workflows(): Array<{ name: string; autoResume: boolean; schedule?: Schedule | undefined }>;
  /** True when the run's attempt has no ending and its owner is gone (the run reads interrupted). */
  isInterrupted(listing: RunListing): Promise<boolean>;
  /** Claim (only if still ready) and run one attempt; undefined when it was not ready after all. */
  claimReady(runId: string): Promise<RunResult | undefined>;
  /** Wake the parked parents (of these workflows) whose child run has ended: a wake-up a crash lost. */
  wakeParentsOfEnded(workflows: string[]): Promise<void>;
  /** Start the run of a schedule's tick; undefined when it exists already (another worker started it). */
  startTick(tick: DueTick): Promise<RunResult | undefined>;
}

// Wake-ups are shared by every engine in this process (and every copy of this module).
const WAKE = Symbol.for("steplog.wakeWorkers");
const listeners = ((globalThis as unknown as Record<symbol, Set<() => void>>)[WAKE] ??= new Set());

/** Wake every worker in this process: something became ready. */
export function wakeWorkers(): void {
  for (const listener of listeners) listener();
}

export function validateWorkOptions(options: WorkOptions): { concurrency: number; pollMs: number } {
  const concurrency = options.concurrency ?? 1;
  const pollMs = options.pollMs ?? 1000;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new InvalidOptionError(`work(): concurrency must be a whole number ≥ 1, got ${String(options.concurrency)}.`);
  if (!(typeof pollMs === "number" && pollMs > 0)) throw new InvalidOptionError(`work(): pollMs must be > 0, got ${String(options.pollMs)}.`);
  const sources = options.sources;
  if (sources !== undefined && (typeof sources !== "object" || sources === null || Object.values(sources).some((s) => typeof s !== "string"))) {
    throw new InvalidOptionError(`work(): sources must be an object of strings by workflow name ({ report: "/app/report.mjs" }).`);
  }
  return { concurrency, pollMs };
}

export async function work(host: WorkerHost, options: WorkOptions, stop: AbortSignal): Promise<WorkSummary> {
  const { concurrency, pollMs } = validateWorkOptions(options);
  const active = new Map<string, Promise<void>>();
  const attempts: RunResult[] = [];
  // Runs that could not be claimed are skipped for a poll (pollMs, however often the worker is
  // woken meanwhile), so one busy or foreign run can neither spin this loop nor starve the others.
  let skip = new Set<string>();
  /** Runs a flow-control limit left no turn: tried again when an attempt ends here, or after pollMs. */
  const limited = new Set<string>();
  let skippingSince = Date.now();
  const warned = new Set<string>();
  const ticker = new Ticker(
    {
      store: host.store,
      now: () => host.now(),
      scheduled: () => host.workflows().flatMap((w) => (w.schedule ? [{ name: w.name, schedule: w.schedule }] : [])),
    },
    pollMs,
  );
  // Parents whose child ended while no process could wake them: looked for at once, then now and again.
  const parentsEvery = Math.max(10 * pollMs, 5000);
  let parentsLookedAt = -Infinity;
  let woken = false;
  let wake: () => void = () => {
    woken = true;
  };
  /** Claim and run these ready runs, in this order, while a slot is free. */
  const claimEach = (runIds: string[]) => {
    for (const runId of runIds) {
      if (active.size >= concurrency || stop.aborted) break;
      if (active.has(runId) || skip.has(runId) || limited.has(runId)) continue;
      const running = host
        .claimReady(runId)
        .then((result) => {
          if (!result) {
            skip.add(runId);
            return;
          }
          attempts.push(result);
          // An attempt ended here: a turn may have come for the runs that had none.
          limited.clear();
        })
        .catch((error: unknown) => {
          // Refused: another worker or a continue got there first, or it is not ours; or no
          // turn for it now (looked at again when an attempt ends here, or after pollMs).
          (isSteplogError(error, "FLOW_LIMITED") ? limited : skip).add(runId);
          // Anything else (a key this engine lacks, a dead-lettered run) is said once per run.
          // Busy, or no turn now (a flow-control limit): looked at again after pollMs, quietly.
          if (!(isSteplogError(error, "RUN_BUSY") || isSteplogError(error, "FLOW_LIMITED") || warned.has(runId))) {
            warned.add(runId);
            process.emitWarning(`steplog worker: run ${JSON.stringify(runId)} was not taken: ${(error as Error).message}`, {
              code: "STEPLOG_WORKER_REFUSED",
            });
          }
        })
        .finally(() => {
          active.delete(runId);
          // A finished attempt, or a run it could not take (skipped for pollMs), frees a slot:
          // look again at once, so one run it cannot take never holds up the others.
          wake();
        });
      active.set(runId, running);
    }
  };
  const listener = () => wake();
  listeners.add(listener);
  stop.addEventListener("abort", listener);
  try {
    // Before any store read: a tick that comes due while the first listing is slow is still this worker's to try.
    ticker.begin();
    while (!stop.aborted) {
      if (Date.now() - skippingSince >= pollMs) {
        skip = new Set();
        limited.clear();
        skippingSince = Date.now();
      }
      if (active.size < concurrency) {
        const ready = await listReady(host, concurrency - active.size + skip.size + limited.size + active.size, pollMs);
        // Runs whose owner is gone first: they were under way before any of the new work came due.
        claimEach(ready.ownerGone);
        // Then the ticks of schedules, started when due, in the same slots as the claims.
        if (active.size < concurrency && !stop.aborted) {
          for (const tick of await ticker.due(concurrency - active.size)) {
            if (stop.aborted) break;
            if (active.has(tick.id)) continue; // its run exists: this worker is running it
            const starting = host
              .startTick(tick)
              .then((result) => {
                if (result) attempts.push(result);
              })
              .catch((error: unknown) => ticker.failed(tick, error))
              .finally(() => {
                active.delete(tick.id);
                wake();
              });
            active.set(tick.id, starting);
          }
        }
        // Then the due runs.
        claimEach(ready.due);
      }
      if (Date.now() - parentsLookedAt >= parentsEvery) {
        parentsLookedAt = Date.now();
        await host.wakeParentsOfEnded(host.workflows().map((w) => w.name)).catch((error: unknown) =>
          process.emitWarning(
            `steplog worker: could not look for parents of ended child runs (${(error as Error).message}); looking again in ${parentsEvery} ms.`,
            {
              code: "STEPLOG_WORKER_POLL_FAILED",
            },
          ),
        );
      }
      if (!woken) {
        // Until something wakes it, or pollMs passes (skips expire by time, at the top of the loop).
        // Until the next tick, if it comes before the next poll (a few ms past it: ticks are whole
        // seconds). A tick due now waits for a free slot, which wakes the loop.
        const toTick = ticker.msToNext();
        const waitMs = toTick === undefined || toTick === 0 ? pollMs : Math.min(pollMs, toTick + 5);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      woken = false;
      wake = () => {
        woken = true;
      };
    }
    await Promise.all(active.values());
    return { attempts };
  } finally {
    listeners.delete(listener);
    stop.removeEventListener("abort", listener);
  }
}

/** The runs a worker may claim: those whose owner is gone, longest gone first, and the due ones. */
interface ReadyRuns {
  ownerGone: string[];
  due: string[];
}

/**
 * The ready runs, or none if the store could not list them (a database restarting, a file
 * error): the worker says so and looks again at its next poll. Stopping would leave the
 * attempts it runs unwatched.
 */
async function listReady(host: WorkerHost, limit: number, pollMs: number): Promise<ReadyRuns> {
  try {
    return await readyRuns(host, limit);
  } catch (error) {
    process.emitWarning(`steplog worker: could not list the ready runs (${(error as Error).message}); looking again in ${pollMs} ms.`, {
      code: "STEPLOG_WORKER_POLL_FAILED",
    });
    return { ownerGone: [], due: [] };
  }
}

async function readyRuns(host: WorkerHost, limit: number): Promise<ReadyRuns> {
  const ours = host.workflows();
  // Highest priority first, then oldest due (the store orders a dueBy listing so), listed per workflow of
  // this worker: due runs of workflows it does not have must not hide its own.
  const perWorkflow = await Promise.all(
    ours.map((w) => host.store.listRuns({ status: ["waiting"], workflow: w.name, dueBy: host.now(), limit: Math.max(limit, 16) })),
  );
  const due = perWorkflow
    .flat()
    .sort((a, b) => (b.run.priority ?? 0) - (a.run.priority ?? 0) || a.run.wakeAt! - b.run.wakeAt!)
    .map((l) => l.run.id);
  // Only runs whose owner is gone: a live attempt's run would just be refused (RUN_BUSY), and
  // listing them first could hide an old abandoned one behind many live ones.
  const gone: RunListing[] = [];
  for (const workflow of ours.filter((w) => w.autoResume)) {
    const stuck = await host.store.listRuns({ status: ["running", "interrupted"], workflow: workflow.name });
    const interrupted = await Promise.all(stuck.map((l) => host.isInterrupted(l)));
    gone.push(...stuck.filter((_, i) => interrupted[i]));
  }
  // Longest gone first: the owner last heard from (its lease's last renewal) longest ago.
  const ownerGone = gone
    .sort((a, b) => lastHeardOf(a) - lastHeardOf(b) || (a.run.id < b.run.id ? -1 : 1))
    .slice(0, Math.max(limit, 16))
    .map((l) => l.run.id);
  return { ownerGone, due };
}

/** When the owner of an interrupted run was last heard from, on its own clock. */
function lastHeardOf(listing: RunListing): number {
  return listing.lease?.heartbeatAt ?? listing.lastAttempt?.startedAt ?? listing.run.updatedAt;
}
