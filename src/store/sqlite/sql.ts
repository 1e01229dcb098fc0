/**
 * The statements the SQLite store runs, prepared once per connection, and how a row read back
 * becomes the store contract's shape. Columns are aliased to the contract's camelCase names, so
 * most rows need no conversion; attempts do (SQLite keeps booleans as 0/1 and lists as JSON).
 */

import type { SqliteConnection, SqliteStatement } from "./drivers/connection.js";
import { RUN_INSERT_COLUMNS } from "../run-values.js";
import { ENDED_STATUSES, type AttemptRow, type Consent, type Effect, type LeaseRow, type StepRow } from "../types.js";

export const RUN_COLUMNS = `id, workflow, version, args, status, attempts, budget_used AS budgetUsed, source, deadline, value, error,
  waiting_for AS waitingFor, wake_at AS wakeAt, parent, concurrency_key AS concurrencyKey, rate_key AS rateKey, priority, dedupe_key AS dedupeKey,
  trace_context AS traceContext, cost_budget AS costBudget, spent_usd AS spentUsd, spent_tokens AS spentTokens, created_at AS createdAt, updated_at AS updatedAt`;
const EVENT_COLUMNS = `run_id AS runId, seq, name, payload, sent_at AS sentAt, consumed_by AS consumedBy, key`;
const ATTEMPT_COLUMNS = `run_id AS runId, number, host, boot_id AS bootId, pid, process_start AS processStart,
  started_at AS startedAt, ended_at AS endedAt, ending, from_step AS fromStep, forced, error, consent, reused`;
/** The same without each attempt's list of reused steps (long for long runs; a claim does not read it). */
const ATTEMPT_COLUMNS_LEAN = ATTEMPT_COLUMNS.replace(/, reused$/, ", NULL AS reused");
const LEASE_COLUMNS = `run_id AS runId, epoch, attempt, expires_at AS expiresAt, heartbeat_at AS heartbeatAt`;
/** A run's step rows are read as arrays in this column order, and made StepRows by stepFromDb. */
const STEP_COLUMNS = `run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error,
  version, intended_at, ended_at, calls, resolution, usage, position`;

/**
 * A step row read as an array (STEP_COLUMNS' order) as a StepRow. Read so rather than as objects:
 * better-sqlite3 sets each column of a row object through V8's API, one shape transition a
 * column, which took 40 % of reading a 10,000-step run; an object literal has one shape, made once.
 */
export function stepFromDb(r: unknown[]): StepRow {
  return {
    runId: r[0] as string,
    seq: r[1] as number,
    attempt: r[2] as number,
    key: r[3] as string,
    name: r[4] as string,
    status: r[5] as StepRow["status"],
    effect: r[6] as StepRow["effect"],
    idempotencyKey: r[7] as string,
    value: r[8] as string | null,
    error: r[9] as string | null,
    version: r[10] as string | null,
    intendedAt: r[11] as number,
    endedAt: r[12] as number | null,
    calls: r[13] as number,
    resolution: r[14] as string | null,
    usage: r[15] as string | null,
    position: r[16] as number | null,
  };
}

type Stmt = SqliteStatement;

/**
 * Where a run's step rows are (schema 10): in the chunks listed for its number, checked against
 * the number too. `num` is the SQL that gives the run's number (a parameter, a column).
 */
export const inRunChunks = (num: string): string => `chunk IN (SELECT chunk FROM step_chunks WHERE run_num = ${num}) AND run_num = ${num}`;

/**
 * A run's rows without a chunk (schema 11): inserted by an older version of steplog still
 * running against an upgraded file, or by hand. Found by run id, through the index that holds
 * only such rows; a row that names a run number must name this run's (a run deleted by hand
 * and made again under its id does not inherit the old one's rows). `runId` and `num` are the
 * SQL that gives the run's id and number.
 */
export const unchunkedOf = (runId: string, num: string): string => `chunk IS NULL AND run_id = ${runId} AND (run_num IS NULL OR run_num = ${num})`;

/** What a step's outcome writes; the common success binds 3 values: the intent's null error, resolution and usage stand. */
const OUTCOME_SET = `status = ?, value = ?, error = ?, ended_at = ?, calls = ?, resolution = ?, usage = ?`;
const SUCCEEDED_SET = `status = 'succeeded', value = ?, ended_at = ?, calls = ?`;

/** The prepared statements by name. */
export interface Statements {
  getRun: Stmt;
  getAttempts: Stmt;
  getAttemptsLean: Stmt;
  getLastAttempt: Stmt;
  getSteps: Stmt;
  getLease: Stmt;
  getFence: Stmt;
  /** SQLite's count of commits by other connections (plucked): see SqliteWrites.beginBatch. */
  dataVersion: Stmt;
  getEvents: Stmt;
  insertEvent: Stmt;
  wakeOnEvent: Stmt;
  consumeEvent: Stmt;
  /**
   * Positional (runInsertValues, run-values.ts): a run's start binds 21 values, faster by position
   * than by name. Returns the run's number, or no row when the id is taken (nothing written).
   */
  insertRun: Stmt;
  /** A run with this dedupe key that has not ended. */
  getActiveByDedupeKey: Stmt;
  /** Flow control: the other runs with a concurrency key whose lease is held, with the holding attempt. */
  getKeyHolders: Stmt;
  /** Flow control: attempts started since a time by the runs with a rate key. */
  countStartedSince: Stmt;
  /** Positional: insertAttempt in writes.ts. */
  insertAttempt: Stmt;
  /** Positional: run id, epoch, attempt, expires at, heartbeat at. */
  upsertLease: Stmt;
  renewLease: Stmt;
  fenceOut: Stmt;
  /** Positional: heartbeat at, run id. */
  releaseLease: Stmt;
  /** Named: a step appended outside the step path (an update's), in its run's side chunk (minus its number: listSideChunk lists it). */
  insertStep: Stmt;
  /** Lists a run's side chunk (minus its number: its rows written outside the step path and before schema 10) if it is not listed yet: by run id. */
  listSideChunk: Stmt;
  getRunNum: Stmt;
  /** The highest chunk any step row holds (plucked; null in an empty table): a new chunk is one above it and above 0. */
  topChunk: Stmt;
  /** Positional: run number, chunk. */
  insertChunk: Stmt;
  /** A run's latest chunk (plucked; null when it has none): by run number. */
  latestChunkOf: Stmt;
  /** The highest seq in a chunk (plucked; null when empty). */
  topSeqIn: Stmt;
  /** The highest seq of a run's rows without a chunk (plucked; null when none): run id, run number. */
  topSeqUnchunked: Stmt;
  /** Positional: run number, chunk, then the row's columns (the hot path's; the chunk is the run slot's). */
  insertStepAt: Stmt;
  /**
   * insertStepAt for the common intent (nothing recorded yet, no resolution carried over), one
   * statement per effect with the effect written in it: 10 values bound instead of 18 (each value
   * bound costs a call into V8, a string its conversion).
   */
  insertIntentIdempotent: Stmt;
  insertIntentRead: Stmt;
  insertIntentCompensatable: Stmt;
  insertIntentIrreversible: Stmt;
  /** The common intent with a resolution (a step's recorded input): the 10 values, then effect and resolution. */
  insertIntentWithResolution: Stmt;
  /** A step's outcome, its row found through the run's chunks: status … usage, run number twice, seq. */
  outcome: Stmt;
  /** outcome with the row looked for in one chunk (the run slot's current one, a hint): status … usage, chunk, run number, seq. */
  outcomeInChunk: Stmt;
  /** outcome for the common success (no error, resolution or usage to record): value, ended at, calls, run number twice, seq. */
  outcomeSucceeded: Stmt;
  /** outcomeSucceeded in one chunk: value, ended at, calls, chunk, run number, seq. */
  outcomeSucceededInChunk: Stmt;
  /** outcomeSucceeded for the row its intent was inserted as: value, ended at, calls, rowid, run number, seq. */
  outcomeSucceededAtRow: Stmt;
  /** outcome for a row without a chunk (an older version's): status … usage, run id, run number, seq. */
  outcomeUnchunked: Stmt;
  /** Positional: ending, ended at, error, reused, run id, number. */
  endAttempt: Stmt;
  /** Positional: usd, tokens, run id: an outcome's spend added to a run with a budget. */
  addSpend: Stmt;
}

export function prepare(db: SqliteConnection): Statements {
  return {
    getRun: db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?`),
    addSpend: db.prepare(`UPDATE runs SET spent_usd = spent_usd + ?, spent_tokens = spent_tokens + ? WHERE id = ?`),
    getAttempts: db.prepare(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ? ORDER BY number`),
    getAttemptsLean: db.prepare(`SELECT ${ATTEMPT_COLUMNS_LEAN} FROM attempts WHERE run_id = ? ORDER BY number`),
    getLastAttempt: db.prepare(`SELECT ${ATTEMPT_COLUMNS} FROM attempts WHERE run_id = ? ORDER BY number DESC LIMIT 1`),
    getSteps: db.prepareRaw(
      `WITH run AS (SELECT id, num FROM runs WHERE id = ?)
       SELECT ${STEP_COLUMNS} FROM steps, run WHERE ${inRunChunks("run.num")}
       UNION ALL SELECT ${STEP_COLUMNS} FROM steps, run WHERE ${unchunkedOf("run.id", "run.num")}
       ORDER BY seq`,
    ),
    getLease: db.prepare(`SELECT ${LEASE_COLUMNS} FROM leases WHERE run_id = ?`),
    getFence: db.prepare(`SELECT epoch, attempt FROM leases WHERE run_id = ?`),
    dataVersion: db.preparePluck(`PRAGMA data_version`),
    getEvents: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE run_id = ? ORDER BY seq`),
    insertEvent: db.prepare(
      `INSERT INTO events (run_id, seq, name, payload, sent_at, consumed_by, key) VALUES (@runId, @seq, @name, @payload, @sentAt, @consumedBy, @key)`,
    ),
    wakeOnEvent: db.prepare(
      `UPDATE runs SET wake_at = @now WHERE id = @runId AND EXISTS (SELECT 1 FROM events WHERE run_id = @runId AND name = @name AND consumed_by IS NULL)`,
    ),
    consumeEvent: db.prepare(`UPDATE events SET consumed_by = @by WHERE run_id = @runId AND seq = @seq AND consumed_by IS NULL`),
    insertRun: db.prepare(
      `INSERT INTO runs (${RUN_INSERT_COLUMNS}, num)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(num), 0) + 1 FROM runs))
       ON CONFLICT (id) DO NOTHING RETURNING num`,
    ),
    getActiveByDedupeKey: db.prepare(
      `SELECT ${RUN_COLUMNS} FROM runs WHERE dedupe_key = ? AND status NOT IN (${ENDED_STATUSES.map((s) => `'${s}'`).join(", ")}) LIMIT 1`,
    ),
    getKeyHolders: db.prepare(
      `SELECT l.epoch, l.expires_at AS expiresAt, l.heartbeat_at AS heartbeatAt,
         a.run_id AS runId, a.number, a.host, a.boot_id AS bootId, a.pid, a.process_start AS processStart, a.started_at AS startedAt,
         a.ended_at AS endedAt, a.ending, a.from_step AS fromStep, a.forced, a.error, a.consent, NULL AS reused
       FROM runs r JOIN leases l ON l.run_id = r.id JOIN attempts a ON a.run_id = l.run_id AND a.number = l.attempt
       WHERE r.concurrency_key = ? AND r.id <> ? AND l.attempt IS NOT NULL`,
    ),
    countStartedSince: db.prepare(`SELECT count(*) AS n FROM attempts WHERE started_at >= ? AND run_id IN (SELECT id FROM runs WHERE rate_key = ?)`),
    insertAttempt: db.prepare(
      `INSERT INTO attempts (run_id, number, host, boot_id, pid, process_start, started_at, ended_at, ending, from_step, forced, error, reused, consent)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    upsertLease: db.prepare(
      `INSERT INTO leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, attempt = excluded.attempt, expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at`,
    ),
    renewLease: db.prepare(`UPDATE leases SET expires_at = @expiresAt, heartbeat_at = @heartbeatAt WHERE run_id = @runId`),
    fenceOut: db.prepare(`UPDATE leases SET epoch = epoch + 1, attempt = NULL, expires_at = 0, heartbeat_at = @heartbeatAt WHERE run_id = @runId`),
    releaseLease: db.prepare(`UPDATE leases SET attempt = NULL, expires_at = 0, heartbeat_at = ? WHERE run_id = ?`),
    insertStep: db.prepare(
      `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
       VALUES ((SELECT num FROM runs WHERE id = @runId), -(SELECT num FROM runs WHERE id = @runId), @runId, @seq, @attempt, @key, @name, @status, @effect, @idempotencyKey, @value, @error, @version, @intendedAt, @endedAt, @calls, @resolution, @usage, @position)`,
    ),
    listSideChunk: db.prepare(`INSERT OR IGNORE INTO step_chunks (run_num, chunk) SELECT num, -num FROM runs WHERE id = ? AND num IS NOT NULL`),
    getRunNum: db.prepare(`SELECT num FROM runs WHERE id = ?`),
    topChunk: db.preparePluck(`SELECT chunk FROM steps ORDER BY chunk DESC LIMIT 1`),
    latestChunkOf: db.preparePluck(`SELECT max(chunk) FROM step_chunks WHERE run_num = ?`),
    topSeqIn: db.preparePluck(`SELECT max(seq) FROM steps WHERE chunk = ?`),
    topSeqUnchunked: db.preparePluck(`SELECT max(seq) FROM steps WHERE ${unchunkedOf("?", "?")}`),
    insertChunk: db.prepare(`INSERT INTO step_chunks (run_num, chunk) VALUES (?, ?)`),
    // The hot path's two statements; the caller has checked the run's fence in this transaction.
    insertStepAt: db.prepare(
      `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertIntentIdempotent: insertIntent(db, "idempotent"),
    insertIntentRead: insertIntent(db, "read"),
    insertIntentCompensatable: insertIntent(db, "compensatable"),
    insertIntentIrreversible: insertIntent(db, "irreversible"),
    insertIntentWithResolution: db.prepare(
      `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, idempotency_key, version, intended_at, position, effect, resolution, status, value, error, ended_at, calls, usage)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'intended', NULL, NULL, NULL, 0, NULL)`,
    ),
    // The intent row's error, resolution and usage are what the outcome carries when they are null
    // (the engine writes one row object, adding to it): the common success leaves them be.
    outcome: db.prepare(`UPDATE steps SET ${OUTCOME_SET} WHERE ${inRunChunks("?")} AND seq = ? AND status = 'intended'`),
    outcomeInChunk: db.prepare(`UPDATE steps SET ${OUTCOME_SET} WHERE chunk = ? AND run_num = ? AND seq = ? AND status = 'intended'`),
    outcomeSucceeded: db.prepare(`UPDATE steps SET ${SUCCEEDED_SET} WHERE ${inRunChunks("?")} AND seq = ? AND status = 'intended'`),
    outcomeSucceededInChunk: db.prepare(`UPDATE steps SET ${SUCCEEDED_SET} WHERE chunk = ? AND run_num = ? AND seq = ? AND status = 'intended'`),
    outcomeUnchunked: db.prepare(`UPDATE steps SET ${OUTCOME_SET} WHERE ${unchunkedOf("?", "?")} AND seq = ? AND status = 'intended'`),
    outcomeSucceededAtRow: db.prepare(`UPDATE steps SET ${SUCCEEDED_SET} WHERE rowid = ? AND run_num = ? AND seq = ? AND status = 'intended'`),
    endAttempt: db.prepare(`UPDATE attempts SET ending = ?, ended_at = ?, error = ?, reused = ? WHERE run_id = ? AND number = ?`),
  };
}

export type StoredAttempt = Omit<AttemptRow, "forced" | "reused" | "consent"> & { forced: number; reused: string | null; consent: string | null };

/** SQLite keeps booleans as 0/1 and lists as JSON; `reused` is absent until an ending records it, `consent` unless one was given. */
export function attemptFromDb(row: StoredAttempt): AttemptRow {
  const { reused, forced, consent, ...rest } = row;
  const attempt: AttemptRow = { ...rest, forced: !!forced };
  if (reused !== null) attempt.reused = JSON.parse(reused) as string[];
  if (consent !== null) attempt.consent = JSON.parse(consent) as Consent;
  return attempt;
}

/** A row of getKeyHolders: the lease's columns and its holding attempt's. */
export type KeyHolderRow = StoredAttempt & { epoch: number; expiresAt: number; heartbeatAt: number };

/** A getKeyHolders row as the lease and the attempt that holds it. */
export function keyHolderFromDb(row: KeyHolderRow): { lease: LeaseRow; attempt: AttemptRow } {
  const { epoch, expiresAt, heartbeatAt, ...attempt } = row;
  return { lease: { runId: row.runId, epoch, attempt: row.number, expiresAt, heartbeatAt }, attempt: attemptFromDb(attempt) };
}

/** The common intent's INSERT for one effect, written in it as a literal (an Effect: one of four fixed words). */
function insertIntent(db: SqliteConnection, effect: Effect): Stmt {
  return db.prepare(
    `INSERT INTO steps (run_num, chunk, run_id, seq, attempt, key, name, status, effect, idempotency_key, value, error, version, intended_at, ended_at, calls, resolution, usage, position)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'intended', '${effect}', ?, NULL, NULL, ?, ?, NULL, 0, NULL, NULL, ?)`,
  );
}
