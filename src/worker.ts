/**
 * engine.work(): a loop that claims runs that are ready — an event arrived, a timer or a wait's
 * timeout is due, an approval was given, or an interrupted run whose workflow sets autoResume —
 * through the same lease as a continue, and runs them, up to `concurrency` at a time. Sends and
 * approvals in this process wake it at once; otherwise it polls every `pollMs`. When its signal
 * aborts it stops claiming, lets the attempts it runs finish, and resolves.
 */

import { InvalidOptionError } from "./errors.js";
import type { RunResult } from "./attempt.js";
import type { Store } from "./store/types.js";

export interface WorkOptions {
  /** Attempts run at once. Default 1. */
  concurrency?: number;
  /** How often to look for ready runs when nothing wakes the worker, in ms. Default 1000. */
  pollMs?: number;
  /** Abort to stop: no new claims; running attempts finish; work() resolves. */
  signal?: AbortSignal;
}

export interface WorkSummary {
  /** Attempts this worker ran, with how each ended. */
  attempts: RunResult[];
}

export interface WorkerHost {
  store: Store;
  now(): number;
  autoResumeWorkflows(): string[];
  /** Claim (only if still ready) and run one attempt; undefined when another worker was faster. */
  claimReady(runId: string): Promise<RunResult | undefined>;
  onWake(listener: () => void): () => void;
}

export async function work(host: WorkerHost, options: WorkOptions = {}): Promise<WorkSummary> {
  const concurrency = options.concurrency ?? 1;
  const pollMs = options.pollMs ?? 1000;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new InvalidOptionError(`work(): concurrency must be a whole number ≥ 1, got ${String(options.concurrency)}.`);
  if (!(pollMs > 0)) throw new InvalidOptionError(`work(): pollMs must be > 0, got ${String(options.pollMs)}.`);
  const signal = options.signal;
  const active = new Map<string, Promise<void>>();
  const attempts: RunResult[] = [];
  let wake: () => void = () => {};
  const unsubscribe = host.onWake(() => wake());
  const onAbort = () => wake();
  signal?.addEventListener("abort", onAbort);
  try {
    while (!signal?.aborted) {
      const slots = concurrency - active.size;
      if (slots > 0) {
        for (const runId of await readyRuns(host, slots + active.size)) {
          if (active.size >= concurrency || signal?.aborted) break;
          if (active.has(runId)) continue;
          const running = host
            .claimReady(runId)
            .then((result) => {
              if (result) attempts.push(result);
            })
            .catch(() => {
              // A refusal here means another worker or a continue got there first.
            })
            .finally(() => {
              active.delete(runId);
              wake();
            });
          active.set(runId, running);
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    await Promise.all(active.values());
    return { attempts };
  } finally {
    unsubscribe();
    signal?.removeEventListener("abort", onAbort);
  }
}

async function readyRuns(host: WorkerHost, limit: number): Promise<string[]> {
  const due = await host.store.listRuns({ status: ["waiting"], dueBy: host.now(), limit });
  const ids = due.sort((a, b) => (a.run.wakeAt ?? 0) - (b.run.wakeAt ?? 0)).map((l) => l.run.id);
  for (const workflow of host.autoResumeWorkflows()) {
    const stuck = await host.store.listRuns({ status: ["running", "interrupted"], workflow, limit });
    ids.push(...stuck.map((l) => l.run.id));
  }
  return ids;
}
