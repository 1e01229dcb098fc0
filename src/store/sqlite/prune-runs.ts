/**
 * The SQLite store's pruneRuns (engine.prune) and takeTurn (retention's one pruner), inside one
 * write transaction the store opens. A pruned run's rows go by its number: its steps through the
 * chunks listed for it (schema.ts) and any without a chunk, then the listing, its events,
 * attempts, lease and run row. `secure_delete` is on for the prune's transactions, so the pages
 * the values were on are overwritten with zeros rather than left in the file's free space.
 */

import { fault } from "../../base/faults.js";
import type { SqliteConnection, SqliteStatement } from "./drivers/connection.js";
import { chooseGroups } from "../prune-groups.js";

export { nonePruned } from "../prune-groups.js";
import type { PruneJudge, PrunedRows } from "../types.js";
import { loadRun } from "./reads.js";
import { inRunChunks, unchunkedOf, type Statements } from "./sql.js";
import type { SqliteWrites } from "./writes.js";

interface PruneStatements {
  children: SqliteStatement;
  runNum: SqliteStatement;
  steps: SqliteStatement;
  unchunked: SqliteStatement;
  chunks: SqliteStatement;
  events: SqliteStatement;
  streams: SqliteStatement;
  attempts: SqliteStatement;
  lease: SqliteStatement;
  run: SqliteStatement;
}

const prepared = new WeakMap<SqliteConnection, PruneStatements>();

function statements(db: SqliteConnection): PruneStatements {
  let s = prepared.get(db);
  if (!s) {
    s = {
      children: db.preparePluck(`SELECT id FROM runs WHERE parent = ?`),
      runNum: db.preparePluck(`SELECT num FROM runs WHERE id = ?`),
      steps: db.prepare(`DELETE FROM steps WHERE ${inRunChunks("@num")}`),
      unchunked: db.prepare(`DELETE FROM steps WHERE ${unchunkedOf("@id", "@num")}`),
      chunks: db.prepare(`DELETE FROM step_chunks WHERE run_num = @num`),
      events: db.prepare(`DELETE FROM events WHERE run_id = ?`),
      streams: db.prepare(`DELETE FROM stream_records WHERE run_id = ?`),
      attempts: db.prepare(`DELETE FROM attempts WHERE run_id = ?`),
      lease: db.prepare(`DELETE FROM leases WHERE run_id = ?`),
      run: db.prepare(`DELETE FROM runs WHERE id = ?`),
    };
    prepared.set(db, s);
  }
  return s;
}

export function pruneInTransaction(db: SqliteConnection, stmts: Statements, writes: SqliteWrites, runIds: string[], approve: PruneJudge): PrunedRows {
  const s = statements(db);
  const rows = chooseGroups(runIds, { load: (id) => loadRun(stmts, id), children: (id) => s.children.all(id) as string[] }, approve);
  db.pragma("secure_delete = ON");
  try {
    deleteRuns(s, writes, rows.ids);
  } finally {
    db.pragma("secure_delete = FAST");
  }
  return rows;
}

function deleteRuns(s: PruneStatements, writes: SqliteWrites, ids: string[]): void {
  for (const id of ids) {
    const num = s.runNum.get(id) as number | null;
    if (num !== null) {
      s.steps.run({ num });
      s.unchunked.run({ id, num });
      s.chunks.run({ num });
    }
    s.events.run(id);
    s.streams.run(id);
    fault("during-prune", id);
    s.attempts.run(id);
    s.lease.run(id);
    s.run.run(id);
    writes.runSlots.delete(id);
  }
}

/**
 * After a batch's commit: its pages copied out of the WAL now (PASSIVE: never waits for readers
 * or writers), so a writer's commit never meets the checkpoint of many batches' pages that
 * SQLite's auto-checkpoint would leave to it (bench case 13).
 */
export function checkpointed(db: SqliteConnection, rows: PrunedRows): PrunedRows {
  db.pragma("wal_checkpoint(PASSIVE)");
  return rows;
}

/** The turn's holder and end, in `meta` under `turn:<name>`. */
export function takeTurnInTransaction(db: SqliteConnection, name: string, holder: string, now: number, until: number): boolean {
  const key = `turn:${name}`;
  const row = db.prepare(`SELECT value FROM meta WHERE key = ?`).get(key) as { value: string } | undefined;
  if (row) {
    const held = JSON.parse(row.value) as { holder: string; until: number };
    if (held.holder !== holder && held.until > now) return false;
  }
  db.prepare(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(key, JSON.stringify({ holder, until }));
  return true;
}
