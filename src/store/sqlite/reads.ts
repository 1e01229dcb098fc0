/**
 * Reading runs back from the SQLite file: one run's records (also read inside the claim and
 * update transactions, where what is read is what the decision is made on) and the listing of
 * runs by status, workflow or due time. The store flushes its write queue before either, so a
 * read sees every write issued before it.
 */

import type { SqliteConnection } from "./drivers/connection.js";
import type { EventRow, FlowFacts, FlowQuery, LeaseRow, RunFilter, RunListing, RunRow, StoredRun, WorkflowCount } from "../types.js";
import { listLimit } from "../state-machine.js";
import { attemptFromDb, keyHolderFromDb, RUN_COLUMNS, stepFromDb, type KeyHolderRow, type Statements, type StoredAttempt } from "./sql.js";

/** A run's records; `forClaim` leaves out the attempts' reused lists, which only views show. */
export function loadRun(s: Statements, runId: string, forClaim = false): StoredRun | undefined {
  const run = s.getRun.get(runId) as RunRow | undefined;
  if (!run) return undefined;
  const attempts = ((forClaim ? s.getAttemptsLean : s.getAttempts).all(runId) as StoredAttempt[]).map(attemptFromDb);
  const steps = (s.getSteps.all(runId) as unknown[][]).map(stepFromDb);
  const lease = (s.getLease.get(runId) as LeaseRow | undefined) ?? null;
  const events = s.getEvents.all(runId) as EventRow[];
  return { run, attempts, steps, lease, events };
}

export function listRuns(db: SqliteConnection, s: Statements, filter: RunFilter): RunListing[] {
  const { where, params } = runsWhere(filter);
  const sql =
    `SELECT ${RUN_COLUMNS} FROM runs${where}` +
    // Newest first; a listing of due runs goes highest priority first, then oldest due first, so none is starved.
    (filter.dueBy !== undefined ? ` ORDER BY priority DESC, wake_at, id` : ` ORDER BY created_at DESC, id`) +
    (listLimit(filter.limit) === undefined ? "" : ` LIMIT ${listLimit(filter.limit)}`);
  const runs = db.prepare(sql).all(...params) as RunRow[];
  return runs.map((run) => {
    const last = s.getLastAttempt.get(run.id) as StoredAttempt | undefined;
    return {
      run,
      lastAttempt: last ? attemptFromDb(last) : null,
      lease: (s.getLease.get(run.id) as LeaseRow | undefined) ?? null,
    };
  });
}

/** How many runs the filter lists (its limit aside), per workflow. */
export function countRuns(db: SqliteConnection, filter: RunFilter): WorkflowCount[] {
  const { where, params } = runsWhere(filter);
  return db.prepare(`SELECT workflow, count(*) AS runs FROM runs${where} GROUP BY workflow`).all(...params) as WorkflowCount[];
}

/** The WHERE clause of a filter (its limit and order aside), with its parameters. */
function runsWhere(filter: RunFilter): { where: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.status) {
    where.push(`status IN (${filter.status.map(() => "?").join(", ")})`);
    params.push(...filter.status);
  }
  if (filter.workflow !== undefined) {
    where.push("workflow = ?");
    params.push(filter.workflow);
  }
  if (filter.dueBy !== undefined) {
    where.push("wake_at IS NOT NULL AND wake_at <= ?");
    params.push(filter.dueBy);
  }
  if (filter.parent !== undefined) {
    where.push("parent = ?");
    params.push(filter.parent);
  }
  if (filter.waitingKind !== undefined) {
    // A waitingFor that is not JSON (a store written by hand) matches nothing rather than failing the listing.
    where.push("(CASE WHEN json_valid(waiting_for) THEN json_extract(waiting_for, '$.kind') END) = ?");
    params.push(filter.waitingKind);
  }
  if (filter.idContains !== undefined) {
    // instr, not LIKE: the text is matched as it is (no wildcards, case-sensitive).
    where.push("instr(id, ?) > 0");
    params.push(filter.idContains);
  }
  if (filter.after !== undefined) {
    // `created_at <= ?` first: a range on runs_by_created, read newest first and stopped at the
    // limit. Written as an OR of the two cases alone, SQLite gathered every older run and sorted
    // them for each page (half a second a page at 50,000 runs).
    where.push("created_at <= ? AND (created_at < ? OR id > ?)");
    params.push(filter.after.createdAt, filter.after.createdAt, filter.after.id);
  }
  return { where: where.length ? ` WHERE ${where.join(" AND ")}` : "", params };
}

/** What a claim's FlowQuery asks of the other runs (read in the claim's transaction). */
export function flowFacts(s: Statements, runId: string, query: FlowQuery): FlowFacts {
  const holders = query.concurrencyKey === undefined ? [] : (s.getKeyHolders.all(query.concurrencyKey, runId) as KeyHolderRow[]).map(keyHolderFromDb);
  const started = query.rate ? (s.countStartedSince.get(query.rate.since, query.rate.key) as { n: number }).n : 0;
  return { holders, started };
}
