/**
 * The SQLite store's streams (schema 12): `stream_records`, one row a record, keyed by (run,
 * stream, seq). An append is queued with the attempt's other writes (group commit) and fenced
 * like them. perf: an append of many records (a burst of chunks) is inserted `ROWS` rows a
 * statement, which costs a chunk fewer calls into the driver and SQLite than a row a statement.
 */

import type { SqliteConnection, SqliteStatement } from "./drivers/connection.js";
import type { Fence, StreamRecord } from "../types.js";
import type { SqliteWrites } from "./writes.js";

const COLUMNS = `run_id AS runId, stream, seq, kind, chunk_offset AS "offset", chunk, step, attempt, at`;

/** Rows a multi-row INSERT: 9 parameters each, well under SQLite's oldest limit of 999 a statement. */
const ROWS = 32;
const INSERT = "INSERT INTO stream_records (run_id, stream, seq, kind, chunk_offset, chunk, step, attempt, at) VALUES ";
const ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?)";

interface StreamStatements {
  insert: SqliteStatement;
  /** `ROWS` rows at once. */
  insertRows: SqliteStatement;
  read: SqliteStatement;
  names: SqliteStatement;
}

const prepared = new WeakMap<SqliteConnection, StreamStatements>();

function statements(db: SqliteConnection): StreamStatements {
  let found = prepared.get(db);
  if (!found) {
    found = {
      insert: db.prepare(INSERT + ROW),
      insertRows: db.prepare(INSERT + Array.from({ length: ROWS }, () => ROW).join(", ")),
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

/** Inside a transaction the caller fenced or needs no fence for (an import): each record as given, ROWS to a statement. */
export function insertRecords(db: SqliteConnection, records: readonly StreamRecord[]): void {
  const { insert, insertRows } = statements(db);
  let i = 0;
  if (records.length >= ROWS) {
    const params: unknown[] = new Array(ROWS * 9);
    for (; i + ROWS <= records.length; i += ROWS) {
      for (let row = 0, p = 0; row < ROWS; row++) {
        const r = records[i + row]!;
        params[p++] = r.runId;
        params[p++] = r.stream;
        params[p++] = r.seq;
        params[p++] = r.kind;
        params[p++] = r.offset;
        params[p++] = r.chunk;
        params[p++] = r.step;
        params[p++] = r.attempt;
        params[p++] = r.at;
      }
      insertRows.run(...params);
    }
  }
  for (; i < records.length; i++) {
    const r = records[i]!;
    insert.run(r.runId, r.stream, r.seq, r.kind, r.offset, r.chunk, r.step, r.attempt, r.at);
  }
}

export function readNames(db: SqliteConnection, runId: string): string[] {
  return statements(db).names.all(runId) as string[];
}

export function readRecords(db: SqliteConnection, runId: string, stream: string, afterSeq: number, limit: number): StreamRecord[] {
  return statements(db).read.all(runId, stream, afterSeq, limit) as StreamRecord[];
}
