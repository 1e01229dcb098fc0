/**
 * createEngine({ retention }): how long runs of each ended status are kept, applied by workers.
 * Each worker (engine.work) looks every `every` (default an hour, and once when it begins); one
 * pruner at a time across processes: a worker prunes only while it holds the store's turn
 * "retention" (Store.takeTurn, a row the SQLite and Postgres stores keep in `meta`), taken for
 * twice `every` and renewed between batches, given back when the worker stops. On a store
 * without takeTurn (JSONL, a store of your own) the turn is held per process, so workers of two
 * processes may prune at once: each batch is judged again in its transaction, so that costs
 * time, never a run that should be kept.
 */

import type { EngineCore } from "./engine-core.js";
import { prune } from "./prune.js";
import type { Retention } from "./retention-options.js";

const TURN = "retention";
// Turns held per process, for a store without takeTurn: shared by every engine and copy of this module.
const LOCAL = Symbol.for("steplog.retentionTurns");
const localTurns = ((globalThis as unknown as Record<symbol, Map<string, { holder: string; until: number }>>)[LOCAL] ??= new Map());

async function takeTurn(core: EngineCore, holder: string, now: number, until: number): Promise<boolean> {
  const shared = core.store.sharedTurn(TURN, holder, now, until);
  if (shared) return shared;
  const where = await core.where();
  const held = localTurns.get(where);
  if (held && held.holder !== holder && held.until > now) return false;
  localTurns.set(where, { holder, until });
  return true;
}

/** A worker's retention: a pass now and every `everyMs`, until `stop` aborts. */
export async function applyRetention(core: EngineCore, retention: Retention, stop: AbortSignal): Promise<void> {
  // Who holds the turn, for the store's row: unique enough among workers (node:crypto is not loaded by "steplog").
  const holder = `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
  const turnMs = 2 * retention.everyMs;
  let heldUntil = 0;
  const renew = async (): Promise<boolean> => {
    const now = core.settings.clock.now();
    if (heldUntil - now > turnMs / 2) return true;
    if (!(await takeTurn(core, holder, now, now + turnMs))) return false;
    heldUntil = now + turnMs;
    return true;
  };
  try {
    while (!stop.aborted) {
      try {
        if (await renew()) {
          for (const { status, keepMs } of retention.rules) {
            if (stop.aborted) break;
            const endedBefore = core.settings.clock.now() - keepMs;
            await prune(core, { endedBefore, status }, { between: async () => !stop.aborted && (await renew()) });
          }
        }
      } catch (error) {
        if (stop.aborted) break;
        process.emitWarning(`steplog worker: retention could not prune (${(error as Error).message}); trying again in ${retention.everyMs} ms.`, {
          code: "STEPLOG_RETENTION_FAILED",
        });
      }
      await sleep(retention.everyMs, stop);
    }
  } finally {
    // Given back: another process's worker may prune at its next look.
    if (heldUntil > 0) {
      const now = core.settings.clock.now();
      await Promise.resolve(takeTurn(core, holder, now, now)).catch(() => undefined);
    }
  }
}

function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      stop.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener("abort", done);
  });
}
