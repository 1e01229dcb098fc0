/**
 * The SQLite store's streams (schema 12): `stream_records`, one row a record, keyed by (run,
 * stream, seq). An append is queued with the attempt's other writes (group commit) and fenced
 * like them.
 */

import type { SqliteConnection, SqliteStatement } from "./drivers/connection.js";
import type { Fence, StreamRecord } from "../types.js";
import type { SqliteWrites } from "./writes.js";

const COLUMNS = `run_id AS runId, stream, seq, kind, chunk_offset AS "offset", chunk, step, attempt, at`;

interface StreamStatements {
  insert: SqliteStatement;
  read: SqliteStatement;
  names: SqliteStatement;
}

const prepared = new WeakMap<SqliteConnection, StreamStatements>();

function statements(db: SqliteConnection): StreamStatements {
  let found = prepared.get(db);
  if (!found) {
    found = {
      insert: db.prepare("INSERT INTO stream_records (run_id, stream, seq, kind, chunk_offset, chunk, step, attempt, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      read: db.prepare(`SELECT ${COLUMNS} FROM stream_records WHERE run_id = ? AND stream = ? AND seq > ? ORDER BY seq LIMIT ?`),
      names: db.preparePluck(`SELECT DISTINCT stream FROM stream_records WHERE run_id = ? ORDER BY stream`),
    };
    prepared.set(db, found);
  }
  return found;
}

/** Inside the batch's transaction: the fence, then each record. */
export function appendRecords(writes: SqliteWrites, db: SqliteConnection, fence: Fence, records: readonly StreamRecord[]): void {
  writes.fence(fence, "stream write");
  insertRecords(db, records);
}

/** Inside a transaction the caller fenced or needs no fence for (an import): each record as given. */
export function insertRecords(db: SqliteConnection, records: readonly StreamRecord[]): void {
  const { insert } = statements(db);
  for (const r of records) insert.run(r.runId, r.stream, r.seq, r.kind, r.offset, r.chunk, r.step, r.attempt, r.at);
}

export function readNames(db: SqliteConnection, runId: string): string[] {
  return statements(db).names.all(runId) as string[];
}

export function readRecords(db: SqliteConnection, runId: string, stream: string, afterSeq: number, limit: number): StreamRecord[] {
  return statements(db).read.all(runId, stream, afterSeq, limit) as StreamRecord[];
}
