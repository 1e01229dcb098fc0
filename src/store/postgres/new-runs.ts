/**
 * Runs started together are created together: the new runs issued in one turn of the event loop
 * go to the server as one transaction (each run's one-statement insert from one-trip.ts), in one
 * round trip with one commit, where each would otherwise take a pooled connection, a round trip
 * and a commit of its own (50 runs started at once: 50 fsyncs on the server, 50 socket writes
 * in the process).
 *
 * Each run still comes out as if created alone: inserted (the lease is ours) or its id taken
 * (then the usual way, claims.ts, reads the run that holds it). When the batch cannot say —
 * the server refused one of its statements or it failed before its COMMIT (nothing committed),
 * or its COMMIT got no reply (it may have committed) — each run goes the usual way on its own,
 * told in the second case that it may exist as ours already: it recognises itself exactly as
 * after its own lost reply, and a failure then says the run may have been recorded.
 */

import type { AttemptRow, Lease, RunRow } from "../types.js";
import { createRun, firstLease } from "./claims.js";
import type { TxState } from "./connection.js";
import type { Database } from "./database.js";
import { maybeCommitted } from "./failures.js";
import { newRunStatement } from "./one-trip.js";

type Created = Lease | { exists: RunRow };

interface NewRun {
  run: RunRow;
  attempt: AttemptRow;
  lease: { expiresAt: number; now: number };
  statement: string;
  resolve: (created: Created) => void;
  reject: (error: unknown) => void;
}

/** Why a batch's runs go the usual way one by one: nothing of it committed, or it may have. */
type Undecided = "not-committed" | "maybe-committed";

export class NewRuns {
  #pending: NewRun[] = [];
  /** Each run id being created now, by the last creation asked for it: a second start of an id waits for the first. */
  readonly #creating = new Map<string, Promise<Created>>();

  constructor(private readonly db: Database) {}

  create(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Created> {
    // Two starts of one id never share a batch nor overlap: the second finds the first's run
    // (were both in a batch whose COMMIT got no reply, each would take the row for its own).
    const before = this.#creating.get(run.id);
    const created = before === undefined ? this.#create(run, attempt, lease) : before.then(noop, noop).then(() => this.#create(run, attempt, lease));
    this.#creating.set(run.id, created);
    const forget = () => {
      if (this.#creating.get(run.id) === created) this.#creating.delete(run.id);
    };
    created.then(forget, forget);
    return created;
  }

  #create(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Created> {
    const statement = newRunStatement(this.db.sql.s, run, attempt, lease);
    // A dedupe key (looked up under a lock) or a value no literal carries: the usual way.
    if (statement === undefined) return createRun(this.db, run, attempt, lease);
    return new Promise<Created>((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => void this.#send());
      this.#pending.push({ run, attempt, lease, statement, resolve, reject });
    });
  }

  async #send(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    const alone = (n: NewRun, maybeCreated: boolean) => createRun(this.db, n.run, n.attempt, n.lease, maybeCreated).then(n.resolve, n.reject);
    if (batch.length === 1) return alone(batch[0]!, false);
    const inserted = await this.#together(batch);
    if (typeof inserted === "string") {
      for (const n of batch) void alone(n, inserted === "maybe-committed");
      return;
    }
    batch.forEach((n, i) => {
      if (inserted[i]) n.resolve(firstLease(n.run, n.attempt, n.lease));
      // Its id was taken before the batch: the usual way reads the run that holds it.
      else void alone(n, false);
    });
  }

  /** Every run of the batch in one transaction: whether each was inserted (false: its id was taken), or why it cannot say. */
  async #together(batch: NewRun[]): Promise<boolean[] | Undecided> {
    let state: TxState | undefined;
    try {
      const inserted = await this.db.transact<boolean[] | Undecided>(true, "the new runs", batch[0]!.run.id, "retry", false, async (client, tx) => {
        state = tx;
        if (tx.maybeCommitted) return "maybe-committed";
        const { conn } = await this.db.connect();
        const results = await conn.transactOnce(client, batch.map((n) => n.statement).join("; "), tx);
        if (results === undefined) return "not-committed";
        if (results.length !== batch.length) throw new Error(`steplog internal: ${results.length} results for ${batch.length} new runs`);
        return results.map((r) => (r.rows[0] as { inserted: number }).inserted === 1);
      });
      return inserted ?? "not-committed";
    } catch (error) {
      // Past its retries (the server gone, the store closed): each run then says so in its own name.
      return maybeCommitted(error, state) ? "maybe-committed" : "not-committed";
    }
  }
}

function noop() {}
