/**
 * engine.cancel(id) for a run this engine is not running: the run is marked `cancelled` and its
 * lease epoch moves on, so an attempt still holding it in another process records nothing more
 * (it ends LEASE_LOST at its next write or renewal). A parked run simply stops waiting. A
 * continue later goes on from where it was.
 */

import { RunCancelledError, RunCompletedError, RunNotFoundError, toErrorInfo } from "../base/errors.js";
import type { Payloads } from "../payloads/payloads.js";
import type { RunStatus, Store } from "../store/types.js";

export async function cancelStoredRun(store: Store, runId: string, reason: string, now: number, payloads: Payloads): Promise<RunStatus> {
  // Encoded before the transaction (a codec may be async); the step it names is read inside.
  const before = await store.loadRun(runId);
  const error = await payloads.encodeError(toErrorInfo(new RunCancelledError(runId, before?.steps.at(-1)?.key, reason)));
  const status = await store.updateRun(runId, (current) => {
    const sealed = payloads.sealedBeyond(current);
    if (sealed) return { error: sealed, result: current.run.status };
    if (current.run.status === "completed") return { error: new RunCompletedError(runId, current.steps[0]?.key), result: current.run.status };
    if (current.run.status === "cancelled") return { result: current.run.status };
    const held = current.lease !== null && current.lease.attempt !== null;
    return {
      run: { status: "cancelled" as const, error, waitingFor: null, wakeAt: null, updatedAt: now },
      ...(held ? { fenceOut: { now } } : {}),
      result: "cancelled" as const,
    };
  });
  if (status === undefined) throw new RunNotFoundError(runId, store.location);
  return status;
}
