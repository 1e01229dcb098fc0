/**
 * Group commit of attempt writes (intents, outcomes, renewals, endings). Writes issued in the
 * same turn of the event loop, by one run or by many, go in one transaction; batches run one
 * after another, so the writes of one process commit in the order they were issued, and
 * writes issued while a batch commits form the next one.
 *
 * Fencing: the batch first locks the lease rows of its runs (sorted by run id, so two batches
 * never deadlock) and checks each write against them: a write whose epoch is no longer the
 * lease's, or whose lease was released, is refused (LEASE_LOST) and writes nothing. Every other
 * transaction on a run (claim, update) takes the same lock first, so a check cannot go stale
 * before COMMIT. A refusal or a failed write is rolled back to its savepoint alone; the others
 * in the batch still commit. (Savepoints cost two round trips a write, and writes rarely fail:
 * a batch runs without them first, and again with them only if one of its writes failed.)
 *
 * The common batch — intents, outcomes of open intents, renewals, endings — goes first in one
 * round trip (one-trip.ts): each write is statements that change rows only under its live lease,
 * so a stale write changes nothing while the others commit, as with savepoints.
 *
 * A batch whose connection died is run again on a new one. If COMMIT had been sent, it may
 * have committed: then each write first looks for its own effect — an intent row exactly
 * like it, an outcome already holding exactly that outcome, its ending already recorded —
 * and counts it as done, so nothing is written twice and nothing is lost.
 */

import { LeaseLostError, SteplogError } from "../../base/errors.js";
import type { StepRow } from "../types.js";
import { isConnectionError, isDbError, isTransient, literal, type Connection, type HeldClient, type PgClient, type TxState } from "./connection.js";
import type { AttemptWrite } from "./attempt-write.js";
import { oneTripStatements, setIntentStatement, setOutcomeStatement } from "./one-trip.js";
import { preparedBatch, type PreparedQuery, type PreparedRow } from "./prepared-batch.js";
import { num, type Sql } from "./sql.js";

interface Pending {
  write: AttemptWrite;
  resolve: () => void;
  reject: (error: unknown) => void;
  settled: Promise<void>;
}

type LeaseState = { epoch: number; attempt: number | null };

export class WriteQueue {
  #pending: Pending[] = [];
  // Set while a drain is scheduled or running (read by ??= below): issuing writes then only queues them.
  // eslint-disable-next-line no-unused-private-class-members
  #running: Promise<void> | undefined;
  /** The batch committing now. */
  #current: Promise<void> = Promise.resolve();

  constructor(
    private readonly conn: Connection,
    private readonly sql: Sql,
    /** Resolves once the schema exists (a write may be the store's first operation). */
    private readonly ready: () => Promise<unknown>,
    /** A store error for a write that failed (named as messages name it, with its run). */
    private readonly toError: (error: unknown, write: AttemptWrite) => Error,
  ) {}

  enqueue(write: AttemptWrite): Promise<void> {
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.#pending.push({ write, resolve, reject, settled: promise.then(noop, noop) });
    // setImmediate: every write issued in this turn of the event loop joins the batch.
    this.#running ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#drain());
    return promise;
  }

  /** Resolves when every write enqueued so far has committed or failed (not later ones: under steady load the queue is never empty). */
  async settled(): Promise<void> {
    await Promise.all([this.#current, ...this.#pending.map((p) => p.settled)]);
  }

  async #drain(): Promise<void> {
    // One pooled connection for batches that follow one another, given back once none follows.
    const held: HeldClient = {};
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        this.#current = this.#commit(batch, held);
        await this.#current;
        // The writers the batch just released issue their next writes a few promise hops later
        // (a sequential step: its outcome and the next step's intent): one turn of the event
        // loop lets all of them join the next batch, instead of the first few going alone (with
        // 50 runs at once, 2.5 commits a round instead of one).
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.conn.letGo(held);
      this.#running = undefined;
    }
  }

  async #commit(batch: Pending[], held: HeldClient): Promise<void> {
    let results: Array<unknown | undefined>;
    try {
      await this.ready();
      results = await this.conn.run((client, state) => this.#transaction(client, batch, state.maybeCommitted, state), "retry", held);
    } catch (error) {
      // The transaction itself failed (server gone past the retry budget, disk full): none of it committed.
      for (const p of batch) p.reject(this.toError(error, p.write));
      return;
    }
    batch.forEach((p, i) => {
      const failure = results[i];
      if (failure === undefined) p.resolve();
      else p.reject(failure instanceof SteplogError || !isDbError(failure) ? failure : this.toError(failure, p.write));
    });
  }

  async #transaction(client: PgClient, batch: Pending[], retrying: boolean, state: TxState): Promise<Array<unknown | undefined>> {
    // A retry after a COMMIT with no reply goes the usual way: its writes look for their own effect.
    if (!retrying) {
      const results = await this.#oneTrip(client, batch, state);
      if (results) return results;
    }
    // First without savepoints (two round trips less per write). A write that fails — rare: a
    // lost lease, a conflict — rolls that pass back, and the batch runs again with a savepoint
    // around each write, so that write fails alone and the others commit.
    if (batch.length > 1) {
      const results = await this.#applyAll(client, batch, retrying, false);
      if (results.every((r) => r === undefined)) {
        await this.conn.commit(client, state);
        return results;
      }
      await this.conn.rollback(client);
    }
    const savepoints = batch.length > 1;
    const results = await this.#applyAll(client, batch, retrying, savepoints);
    if (!savepoints && results[0] !== undefined) await this.conn.rollback(client);
    else await this.conn.commit(client, state);
    return results;
  }

  /**
   * Begin, lock the leases, and apply each write: a failure is its write's result. Without
   * savepoints the first failure ends the pass (the transaction can no longer be used).
   */
  async #applyAll(client: PgClient, batch: Pending[], retrying: boolean, savepoints: boolean): Promise<Array<unknown | undefined>> {
    const leases = await this.#lockLeases(client, batch);
    const results: Array<unknown | undefined> = [];
    for (const p of batch) {
      if (savepoints) await client.query("SAVEPOINT w");
      try {
        await this.#apply(client, p.write, leases, retrying);
        if (savepoints) await client.query("RELEASE SAVEPOINT w");
        results.push(undefined);
      } catch (error) {
        if (isConnectionError(error) || isTransient(error)) throw error;
        if (savepoints) await client.query("ROLLBACK TO SAVEPOINT w");
        results.push(error);
        if (!savepoints) break;
      }
    }
    return results;
  }

  /**
   * The whole batch in one round trip, when each of its writes can be sent as statements that
   * change rows only under its live lease (see one-trip.ts): the common case, a step's outcome
   * and the next intent, or an attempt's last outcome and its ending. Each write that changed
   * nothing is then told why, as the usual way would: its lease is gone, or (never in practice)
   * its row was not as expected; the others are committed, as with savepoints. Undefined when
   * the batch must go the usual way: a write that cannot be sent so, a statement failed (all
   * rolled back; the usual way finds which write it was), or the sequential step's statement
   * applied nothing (it changed nothing; the usual way tells each write why).
   */
  async #oneTrip(client: PgClient, batch: Pending[], state: TxState): Promise<Array<unknown | undefined> | undefined> {
    // Set-based: every intent in one statement, every outcome in another, then the renewals and
    // endings one by one. Not when an ending comes before a step write of its own run (the set
    // statements run first, so that write would no longer find the lease released).
    const ended = new Set<string>();
    let reordered = false;
    for (const p of batch) {
      if (p.write.kind === "end") ended.add(p.write.fence.runId);
      else if ((p.write.kind === "intent" || p.write.kind === "outcome") && ended.has(p.write.fence.runId)) reordered = true;
    }
    const intents = batch.filter((p): p is Pending & { write: { kind: "intent" } } => p.write.kind === "intent");
    const outcomes = batch.filter((p): p is Pending & { write: { kind: "outcome" } } => p.write.kind === "outcome");
    if (intents.length + outcomes.length === batch.length) {
      const prepared = preparedBatch(
        this.sql.s,
        intents.map((p) => p.write as Extract<AttemptWrite, { kind: "intent" }>),
        outcomes.map((p) => p.write as Extract<AttemptWrite, { kind: "outcome" }>),
      );
      if (prepared) return this.#prepared(client, batch, prepared, state);
    }
    if (reordered || intents.length + outcomes.length < 2) return this.#oneTripEach(client, batch, state);
    const statements: string[] = [];
    const setIntents = intents.length
      ? setIntentStatement(
          this.sql.s,
          intents.map((p) => p.write as Extract<AttemptWrite, { kind: "intent" }>),
        )
      : "";
    const setOutcomes = outcomes.length
      ? setOutcomeStatement(
          this.sql.s,
          outcomes.map((p) => p.write as Extract<AttemptWrite, { kind: "outcome" }>),
        )
      : "";
    if (setIntents === undefined || setOutcomes === undefined) return this.#oneTripEach(client, batch, state);
    // Statement 0 is the lease lock; the set statements follow it.
    const intentAt = setIntents ? (statements.push(setIntents), statements.length) : -1;
    const outcomeAt = setOutcomes ? (statements.push(setOutcomes), statements.length) : -1;
    const decisive = new Map<Pending, number>();
    for (const p of batch) {
      if (p.write.kind === "intent" || p.write.kind === "outcome") continue;
      const its = oneTripStatements(this.sql.s, p.write);
      if (its === undefined) return undefined;
      statements.push(...its);
      decisive.set(p, statements.length);
    }
    const results = await this.conn.transactOnce(client, `${this.#lockText(batch)}; ${statements.join("; ")}`, state);
    if (results === undefined) return undefined;
    if (results.length !== statements.length + 1) throw new Error(`steplog internal: ${results.length} results for ${statements.length + 1} statements`);
    const leases = leaseMap(results[0]!.rows);
    const rowsOf = (at: number) =>
      new Set(
        at < 0
          ? []
          : (results[at]!.rows as Array<{ run_id: string; seq: unknown; written_epoch: unknown }>).map((r) => applied(r.run_id, r.seq, r.written_epoch)),
      );
    const inserted = rowsOf(intentAt);
    const updated = rowsOf(outcomeAt);
    const outcomesOf: Array<unknown | undefined> = [];
    for (const p of batch) {
      const w = p.write;
      const done = w.kind === "intent" ? inserted.has(rowOf(w)) : w.kind === "outcome" ? updated.has(rowOf(w)) : results[decisive.get(p)!]!.rowCount === 1;
      if (!done) {
        outcomesOf.push(await this.#notApplied(client, w, leases));
        continue;
      }
      outcomesOf.push(undefined);
      if (w.kind === "end") leases.get(w.fence.runId)!.attempt = null;
    }
    return outcomesOf;
  }

  /**
   * A batch of intents and outcomes as the prepared statement (prepared-batch.ts); undefined when
   * the server refused it, or when the sequential step's statement applied nothing.
   */
  async #prepared(client: PgClient, batch: Pending[], query: PreparedQuery, state: TxState): Promise<Array<unknown | undefined> | undefined> {
    const result = await this.conn.runAlone(client, query, state);
    if (result === undefined) return undefined;
    // The sequential step's statement applied all of its writes or none (and then changed nothing).
    if (query.single) return result.rowCount === 1 ? batch.map(() => undefined) : undefined;
    const rows = result.rows;
    // The counts of what applied: when that is every write, nothing else came back.
    const counts = (rows as PreparedRow[]).find((row) => row.k === 3);
    if (counts === undefined) throw new Error("steplog internal: the batch statement answered without its counts");
    let intentCount = 0;
    for (const p of batch) if (p.write.kind === "intent") intentCount++;
    if (num(counts.seq) === intentCount && num(counts.epoch) === batch.length - intentCount) return batch.map(() => undefined);
    const inserted = new Set<string>();
    const updated = new Set<string>();
    const leases = new Map<string, LeaseState>();
    for (const row of rows as PreparedRow[]) {
      if (row.k === 2) leases.set(row.run_id!, { epoch: num(row.epoch), attempt: row.attempt === null ? null : num(row.attempt) });
      else if (row.k !== 3) (row.k === 0 ? inserted : updated).add(applied(row.run_id!, row.seq, row.epoch));
    }
    const results: Array<unknown | undefined> = [];
    for (const p of batch) {
      const w = p.write as StepWrite;
      const done = (w.kind === "intent" ? inserted : updated).has(rowOf(w));
      results.push(done ? undefined : await this.#notApplied(client, w, leases));
    }
    return results;
  }

  /** #oneTrip with each write as statements of its own (a batch whose order the set statements would change). */
  async #oneTripEach(client: PgClient, batch: Pending[], state: TxState): Promise<Array<unknown | undefined> | undefined> {
    const statements: string[] = [];
    /** Per write, the index of its last statement: the one that tells whether it applied. */
    const decisive: number[] = [];
    for (const p of batch) {
      const its = oneTripStatements(this.sql.s, p.write);
      if (its === undefined) return undefined;
      statements.push(...its);
      decisive.push(statements.length);
    }
    const results = await this.conn.transactOnce(client, `${this.#lockText(batch)}; ${statements.join("; ")}`, state);
    if (results === undefined) return undefined;
    if (results.length !== statements.length + 1) throw new Error(`steplog internal: ${results.length} results for ${statements.length + 1} statements`);
    const leases = leaseMap(results[0]!.rows);
    const outcomes: Array<unknown | undefined> = [];
    for (const [i, p] of batch.entries()) {
      if (results[decisive[i]!]!.rowCount !== 1) {
        outcomes.push(await this.#notApplied(client, p.write, leases));
        continue;
      }
      outcomes.push(undefined);
      // The ending released the lease: a later write of that attempt in this batch changed nothing.
      if (p.write.kind === "end") leases.get(p.write.fence.runId)!.attempt = null;
    }
    return outcomes;
  }

  /** Why a one-round-trip write changed no row. */
  async #notApplied(client: PgClient, write: AttemptWrite, leases: Map<string, LeaseState>): Promise<unknown> {
    const { runId, epoch } = write.fence;
    const lease = leases.get(runId);
    if (lease === undefined || lease.epoch !== epoch || lease.attempt === null) return leaseLost(write);
    if (write.kind === "intent") {
      // Only a retried write finds its own row; anything else at this seq is a real conflict.
      return (await this.#sameStep(client, write.step)) ? undefined : intentConflict(write.step);
    }
    if (write.kind === "outcome") return noOpenIntent(runId, write.outcome.seq);
    return leaseLost(write);
  }

  /** The statement that locks the batch's lease rows (sorted by run id, so two batches never deadlock). */
  #lockText(batch: Pending[]): string {
    const runIds = [...new Set(batch.map((p) => p.write.fence.runId))].sort();
    return `SELECT run_id, epoch, attempt FROM ${this.sql.s}.leases WHERE run_id IN (${runIds.map(literal).join(", ")}) ORDER BY run_id FOR UPDATE`;
  }

  /** Begin, and lock the batch's lease rows, in one round trip. */
  async #lockLeases(client: PgClient, batch: Pending[]): Promise<Map<string, LeaseState>> {
    return leaseMap(await this.conn.beginWith(client, this.#lockText(batch)));
  }

  async #apply(client: PgClient, write: AttemptWrite, leases: Map<string, LeaseState>, retrying: boolean): Promise<void> {
    const { runId, epoch } = write.fence;
    const lease = leases.get(runId);
    const live = lease !== undefined && lease.epoch === epoch && lease.attempt !== null;
    const s = this.sql.s;

    switch (write.kind) {
      case "intent": {
        const { step } = write;
        if (!live) {
          if (retrying && (await this.#sameStep(client, step))) return;
          throw leaseLost(write);
        }
        if (await this.sql.insertStep(client, step, epoch, true)) return;
        // Only a retried write finds its own row; anything else at this seq is a real conflict.
        if (await this.#sameStep(client, step)) return;
        throw intentConflict(step);
      }
      case "outcome": {
        const { consumes, ...fields } = write.outcome;
        // The common case in one round trip: the lease is ours and the intent is open.
        if (live && !consumes) {
          const updated = await client.query(
            `UPDATE ${s}.steps SET status = $3, value = $4, error = $5, ended_at = $6, calls = $7, resolution = $8, usage = $9,
               written_epoch = $10, written_at = clock_timestamp()
             WHERE run_id = $1 AND seq = $2 AND status = 'intended'`,
            [runId, fields.seq, fields.status, fields.value, fields.error, fields.endedAt, fields.calls, fields.resolution, fields.usage, epoch],
          );
          if (updated.rowCount === 1) return;
        }
        const found = await client.query(
          `SELECT status, value, error, ended_at, calls, resolution, usage,
             (SELECT consumed_by FROM ${s}.events WHERE run_id = $1 AND seq = $3) AS consumed_by
           FROM ${s}.steps WHERE run_id = $1 AND seq = $2`,
          [runId, fields.seq, consumes?.eventSeq ?? null],
        );
        const row = found.rows[0] as Record<string, unknown> | undefined;
        const already = () =>
          retrying &&
          row !== undefined &&
          row.status === fields.status &&
          row.value === fields.value &&
          row.error === fields.error &&
          num(row.ended_at) === fields.endedAt &&
          row.calls === fields.calls &&
          row.resolution === fields.resolution &&
          row.usage === fields.usage &&
          (consumes === undefined || row.consumed_by === consumes.by);
        if (!live) {
          if (already()) return;
          throw leaseLost(write);
        }
        if (row?.status !== "intended") {
          if (already()) return;
          throw noOpenIntent(runId, fields.seq);
        }
        if (consumes) {
          const taken = await client.query(`UPDATE ${s}.events SET consumed_by = $3 WHERE run_id = $1 AND seq = $2 AND consumed_by IS NULL`, [
            runId,
            consumes.eventSeq,
            consumes.by,
          ]);
          if (taken.rowCount !== 1) throw new Error(`steplog internal: event ${consumes.eventSeq} of run ${runId} was consumed already`);
        }
        await client.query(
          `UPDATE ${s}.steps SET status = $3, value = $4, error = $5, ended_at = $6, calls = $7, resolution = $8, usage = $9,
             written_epoch = $10, written_at = clock_timestamp()
           WHERE run_id = $1 AND seq = $2 AND status = 'intended'`,
          [runId, fields.seq, fields.status, fields.value, fields.error, fields.endedAt, fields.calls, fields.resolution, fields.usage, epoch],
        );
        return;
      }
      case "renew": {
        if (!live) {
          // A retried renewal whose first try committed (or whose own ending released the lease since) did its job.
          if (retrying && lease?.epoch === epoch) return;
          throw leaseLost(write);
        }
        await client.query(`UPDATE ${s}.leases SET expires_at = $2, heartbeat_at = $3 WHERE run_id = $1`, [runId, write.expiresAt, write.now]);
        return;
      }
      case "end": {
        const { end } = write;
        if (!live) {
          if (retrying && lease?.epoch === epoch && lease.attempt === null) {
            const a = await client.query(`SELECT ending, ended_at FROM ${s}.attempts WHERE run_id = $1 AND number = $2`, [runId, end.attempt]);
            const row = a.rows[0] as { ending: string | null; ended_at: unknown } | undefined;
            if (row && row.ending === end.ending && num(row.ended_at) === end.endedAt) return;
          }
          throw leaseLost(write);
        }
        await client.query(`UPDATE ${s}.attempts SET ending = $3, ended_at = $4, error = $5, reused = $6 WHERE run_id = $1 AND number = $2`, [
          runId,
          end.attempt,
          end.ending,
          end.endedAt,
          end.error,
          end.reused ? JSON.stringify(end.reused) : null,
        ]);
        await this.sql.patchRun(client, runId, end.run);
        if (end.wakeOnEvent !== undefined) {
          await client.query(
            `UPDATE ${s}.runs SET wake_at = $3 WHERE id = $1 AND EXISTS (SELECT 1 FROM ${s}.events WHERE run_id = $1 AND name = $2 AND consumed_by IS NULL)`,
            [runId, end.wakeOnEvent, end.endedAt],
          );
        }
        await client.query(`UPDATE ${s}.leases SET attempt = NULL, expires_at = 0, heartbeat_at = $2 WHERE run_id = $1`, [runId, end.endedAt]);
        lease.attempt = null;
        return;
      }
    }
  }

  /** The row at this step's seq is exactly this step (our own earlier, maybe-committed write). */
  async #sameStep(client: PgClient, step: StepRow): Promise<boolean> {
    const { rows } = await client.query(
      `SELECT row_to_json(t) AS step FROM (SELECT run_id AS "runId", seq, attempt, key, name, status, effect, idempotency_key AS "idempotencyKey",
         value, error, version, intended_at AS "intendedAt", ended_at AS "endedAt", calls, resolution, usage, position
       FROM ${this.sql.s}.steps WHERE run_id = $1 AND seq = $2) t`,
      [step.runId, step.seq],
    );
    const found = rows[0]?.step as Record<string, unknown> | undefined;
    if (!found) return false;
    return Object.entries(step).every(([k, v]) => found[k] === v);
  }
}

const WRITE_NAMES: Record<AttemptWrite["kind"], string> = { intent: "intent", outcome: "outcome", renew: "lease renewal", end: "attempt ending" };

/** A write refused because its attempt no longer holds the run's lease. */
function leaseLost(write: AttemptWrite): LeaseLostError {
  const { runId, epoch } = write.fence;
  return new LeaseLostError(runId, undefined, `${WRITE_NAMES[write.kind]} refused: the lease epoch is no longer ${epoch}`);
}

function intentConflict(step: StepRow): Error {
  return new Error(`steplog internal: step seq ${step.seq} of run ${step.runId} was written already by another intent`);
}

function noOpenIntent(runId: string, seq: number): Error {
  return new Error(`steplog internal: outcome for seq ${seq} of run ${runId} has no open intent`);
}

function leaseMap(rows: Array<{ run_id: string; epoch: unknown; attempt: number | null }>): Map<string, LeaseState> {
  return new Map(rows.map((r) => [r.run_id, { epoch: num(r.epoch), attempt: r.attempt }]));
}

/** A row a batch wrote: its run, its seq and the epoch it was written under (two attempts of one run may write one seq in a batch). */
function applied(runId: string, seq: unknown, epoch: unknown): string {
  return `${runId}\0${num(seq)}\0${num(epoch)}`;
}

type StepWrite = Extract<AttemptWrite, { kind: "intent" | "outcome" }>;

/** The row an intent or an outcome writes, as `applied` names it. */
function rowOf(w: StepWrite): string {
  return applied(w.fence.runId, w.kind === "intent" ? w.step.seq : w.outcome.seq, w.fence.epoch);
}

function noop() {}
