/**
 * The SQLite store's importRuns (engine.import), inside one write transaction the store opens:
 * every run's place checked first (its id, an active run with its dedupe key), then each run's
 * rows inserted as given (its stream records too). Steps go in the run's side chunk (rows written outside the step path,
 * see schema.ts), so a later continue's intents are numbered above them.
 */

import type { ImportedRun, RunRow } from "../types.js";
import type { SqliteConnection } from "./drivers/connection.js";
import { insertRecords } from "./streams.js";
import { runInsertValues } from "../run-values.js";
import type { Statements } from "./sql.js";
import type { SqliteWrites } from "./writes.js";

export function importInTransaction(
  db: SqliteConnection,
  stmts: Statements,
  writes: SqliteWrites,
  runs: ImportedRun[],
): { imported: true } | { exists: RunRow } {
  const ids = new Set<string>();
  const keys = new Set<string>();
  for (const { run } of runs) {
    const taken = (stmts.getRun.get(run.id) ?? (run.dedupeKey == null ? undefined : stmts.getActiveByDedupeKey.get(run.dedupeKey))) as RunRow | undefined;
    if (taken) return { exists: taken };
    if (ids.has(run.id) || (run.dedupeKey != null && keys.has(run.dedupeKey))) return { exists: run };
    ids.add(run.id);
    if (run.dedupeKey != null) keys.add(run.dedupeKey);
  }
  for (const { run, attempts, steps, events, streams, lease } of runs) {
    // ON CONFLICT (id) DO NOTHING: checked free above, in this transaction.
    if (!stmts.insertRun.get(...runInsertValues(run))) throw new Error(`steplog internal: run ${JSON.stringify(run.id)} was not inserted`);
    writes.forgetFence(run.id);
    writes.runSlots.delete(run.id);
    for (const attempt of attempts) writes.insertAttempt(attempt);
    stmts.upsertLease.run(run.id, lease.epoch, lease.attempt, lease.expiresAt, lease.heartbeatAt);
    for (const step of steps) stmts.insertStep.run(step);
    if (steps.length > 0) stmts.listSideChunk.run(run.id);
    for (const event of events) stmts.insertEvent.run({ ...event, key: event.key ?? null });
    insertRecords(db, streams ?? []);
  }
  return { imported: true };
}
