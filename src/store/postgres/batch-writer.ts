/**
 * How the Postgres store writes a batch of attempt writes (intents, outcomes, renewals,
 * endings): group-commit.ts queues them, batches those issued in the same turn of the event
 * loop, by one run or by many, commits the batches one after another (so the writes of one
 * process commit in the order they were issued) and settles them. One transaction a batch.
 *
 * Fencing: the batch first locks the lease rows of its runs (sorted by run id, so two batches
 * never deadlock) and checks each write against them: a write whose epoch is no longer the
 * lease's, or whose lease was released, is refused (LEASE_LOST) and writes nothing. Every other
 * transaction on a run (claim, update) takes the same lock first, so a check cannot go stale
 * before COMMIT. A refusal or a failed write is rolled back to its savepoint alone; the others
 * in the batch still commit. (Savepoints cost two round trips a write, and writes rarely fail:
 * a batch runs without them first, and again with them only if one of its writes failed.)
 *
 * How the batch is sent — one of three one-round-trip shapes, or the usual way — is chosen in
 * one place, batch-shape.ts; the usual way's writes are usual-write.ts.
 *
 * A batch whose connection died is run again on a new one. If COMMIT had been sent, it may
 * have committed: then each write first looks for its own effect (see usual-write.ts), so
 * nothing is written twice and nothing is lost.
 */

import { SteplogError } from "../../base/errors.js";
import { isConnectionError, isDbError, isTransient, literal, type Connection, type HeldClient, type PgClient, type TxState } from "./connection.js";
import type { AttemptWrite } from "./attempt-write.js";
import type { BatchWriter, QueuedWrite } from "../group-commit.js";
import { batchShape, type BatchShape } from "./batch-shape.js";
import type { PreparedQuery, PreparedRow } from "./prepared-batch.js";
import { num, type Sql } from "./sql.js";
import { applied, applyWrite, leaseMap, notApplied, rowOf, type LeaseState, type StepWrite } from "./usual-write.js";

/** A queued attempt write: the write is `a` (`op` and `b` unused). */
export type Queued = QueuedWrite<AttemptWrite, undefined>;

type Results = Array<unknown | undefined>;

export class PgBatchWriter implements BatchWriter<AttemptWrite, undefined> {
  readonly sync = false;
  /** One pooled connection for batches that follow one another, given back once none follows (`idle`). */
  readonly #held: HeldClient = {};

  constructor(
    private readonly conn: Connection,
    private readonly sql: Sql,
    /** Resolves once the schema exists (a write may be the store's first operation). */
    private readonly ready: () => Promise<unknown>,
    /** A store error for a write that failed (named as messages name it, with its run). */
    private readonly toError: (error: unknown, write: AttemptWrite) => Error,
  ) {}

  async write(batch: Queued[]): Promise<void> {
    await this.ready();
    const writes = batch.map((q) => q.a);
    const results = await this.conn.run((client, state) => this.#transaction(client, writes, state.maybeCommitted, state), "retry", this.#held);
    batch.forEach((q, i) => {
      const failure = results[i];
      if (failure !== undefined) q.refused = failure instanceof SteplogError || !isDbError(failure) ? failure : this.toError(failure, q.a);
    });
  }

  /** The transaction itself failed (server gone past the retry budget, disk full): none of it committed. */
  failed(error: unknown, q: Queued): Error {
    return this.toError(error, q.a);
  }

  idle(): void {
    this.conn.letGo(this.#held);
  }

  async #transaction(client: PgClient, writes: AttemptWrite[], retrying: boolean, state: TxState): Promise<Results> {
    const shape = batchShape(this.sql.s, writes, retrying);
    if (shape.kind !== "usual") {
      const results = shape.kind === "prepared" ? await this.#prepared(client, writes, shape.query, state) : await this.#oneTrip(client, writes, shape, state);
      if (results) return results;
    }
    // The usual way. First without savepoints (two round trips less per write). A write that
    // fails — rare: a lost lease, a conflict — rolls that pass back, and the batch runs again
    // with a savepoint around each write, so that write fails alone and the others commit.
    if (writes.length > 1) {
      const results = await this.#applyAll(client, writes, retrying, false);
      if (results.every((r) => r === undefined)) {
        await this.conn.commit(client, state);
        return results;
      }
      await this.conn.rollback(client);
    }
    const savepoints = writes.length > 1;
    const results = await this.#applyAll(client, writes, retrying, savepoints);
    if (!savepoints && results[0] !== undefined) await this.conn.rollback(client);
    else await this.conn.commit(client, state);
    return results;
  }

  /**
   * Begin, lock the leases, and apply each write: a failure is its write's result. Without
   * savepoints the first failure ends the pass (the transaction can no longer be used).
   */
  async #applyAll(client: PgClient, writes: AttemptWrite[], retrying: boolean, savepoints: boolean): Promise<Results> {
    const leases = leaseMap(await this.conn.beginWith(client, this.#lockText(writes)));
    const results: Results = [];
    for (const write of writes) {
      if (savepoints) await client.query("SAVEPOINT w");
      try {
        await applyWrite(client, this.sql, write, leases, retrying);
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
   * A "set" or "each" batch in one round trip (see batch-shape.ts). Each write that changed
   * nothing is then told why, as the usual way would: its lease is gone, or (never in practice)
   * its row was not as expected; the others are committed, as with savepoints. Undefined when a
   * statement failed (all rolled back; the usual way finds which write it was).
   */
  async #oneTrip(client: PgClient, writes: AttemptWrite[], shape: Extract<BatchShape, { kind: "set" | "each" }>, state: TxState): Promise<Results | undefined> {
    const { statements, decisive } = shape;
    const results = await this.conn.transactOnce(client, `${this.#lockText(writes)}; ${statements.join("; ")}`, state);
    if (results === undefined) return undefined;
    if (results.length !== statements.length + 1) throw new Error(`steplog internal: ${results.length} results for ${statements.length + 1} statements`);
    const leases = leaseMap(results[0]!.rows);
    const rowsOf = (at: number) =>
      new Set(
        at < 0
          ? []
          : (results[at]!.rows as Array<{ run_id: string; seq: unknown; written_epoch: unknown }>).map((r) => applied(r.run_id, r.seq, r.written_epoch)),
      );
    const inserted = shape.kind === "set" ? rowsOf(shape.intentAt) : undefined;
    const updated = shape.kind === "set" ? rowsOf(shape.outcomeAt) : undefined;
    const outcomes: Results = [];
    for (const [i, w] of writes.entries()) {
      const done = decisive[i]! < 0 ? (w.kind === "intent" ? inserted! : updated!).has(rowOf(w as StepWrite)) : results[decisive[i]!]!.rowCount === 1;
      if (!done) {
        outcomes.push(await notApplied(client, this.sql.s, w, leases));
        continue;
      }
      outcomes.push(undefined);
      // The ending released the lease: a later write of that attempt in this batch changed nothing.
      if (w.kind === "end") leases.get(w.fence.runId)!.attempt = null;
    }
    return outcomes;
  }

  /**
   * A batch of intents and outcomes as the prepared statement (prepared-batch.ts); undefined when
   * the server refused it, or when the sequential step's statement applied nothing.
   */
  async #prepared(client: PgClient, writes: AttemptWrite[], query: PreparedQuery, state: TxState): Promise<Results | undefined> {
    const result = await this.conn.runAlone(client, query, state);
    if (result === undefined) return undefined;
    // The sequential step's statement applied all of its writes or none (and then changed nothing).
    if (query.single) return result.rowCount === 1 ? writes.map(() => undefined) : undefined;
    const rows = result.rows;
    // The counts of what applied: when that is every write, nothing else came back.
    const counts = (rows as PreparedRow[]).find((row) => row.k === 3);
    if (counts === undefined) throw new Error("steplog internal: the batch statement answered without its counts");
    let intentCount = 0;
    for (const w of writes) if (w.kind === "intent") intentCount++;
    if (num(counts.seq) === intentCount && num(counts.epoch) === writes.length - intentCount) return writes.map(() => undefined);
    const inserted = new Set<string>();
    const updated = new Set<string>();
    const leases = new Map<string, LeaseState>();
    for (const row of rows as PreparedRow[]) {
      if (row.k === 2) leases.set(row.run_id!, { epoch: num(row.epoch), attempt: row.attempt === null ? null : num(row.attempt) });
      else if (row.k !== 3) (row.k === 0 ? inserted : updated).add(applied(row.run_id!, row.seq, row.epoch));
    }
    const results: Results = [];
    for (const w of writes as StepWrite[]) {
      const done = (w.kind === "intent" ? inserted : updated).has(rowOf(w));
      results.push(done ? undefined : await notApplied(client, this.sql.s, w, leases));
    }
    return results;
  }

  /** The statement that locks the batch's lease rows (sorted by run id, so two batches never deadlock). */
  #lockText(writes: AttemptWrite[]): string {
    const runIds = [...new Set(writes.map((w) => w.fence.runId))].sort();
    return `SELECT run_id, epoch, attempt FROM ${this.sql.s}.leases WHERE run_id IN (${runIds.map(literal).join(", ")}) ORDER BY run_id FOR UPDATE`;
  }
}
