/**
 * Runs started together are created together: the new runs issued in one turn of the event loop
 * go to the server as one transaction (each run's one-statement insert from one-trip.ts), in one
 * round trip with one commit, where each would otherwise take a pooled connection, a round trip
 * and a commit of its own (50 runs started at once: 50 fsyncs on the server, 50 socket writes
 * in the process).
 *
 * Each run still comes out as if created alone: inserted (the lease is ours) or its id taken
 * (the run that holds it). When the batch cannot say — the server refused one of its
 * statements (nothing committed), or its COMMIT got no reply (it may have committed) — each run
 * goes the usual way on its own (claims.ts), told in the second case that it may exist as ours
 * already, which it recognises exactly as after its own lost reply.
 */

import type { AttemptRow, Lease, RunRow } from "../types.js";
import { createRun } from "./claims.js";
import type { Database } from "./database.js";
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

/** Why a batch's runs go the usual way one by one. */
type Undecided = "refused" | "maybe-committed";

export class NewRuns {
  #pending: NewRun[] = [];

  constructor(private readonly db: Database) {}

  create(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number; now: number }): Promise<Created> {
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
    let decided: Array<Created | undefined> | Undecided;
    try {
      decided = batch.length === 1 ? "refused" : await this.#together(batch);
    } catch {
      // The batch failed past its retries (the server gone, say): each run says so in its own name.
      decided = "maybe-committed";
    }
    batch.forEach((n, i) => {
      const created = typeof decided === "string" ? undefined : decided[i];
      if (created) n.resolve(created);
      else createRun(this.db, n.run, n.attempt, n.lease, decided === "maybe-committed").then(n.resolve, n.reject);
    });
  }

  /** Every run of the batch in one transaction; a run whose id was taken is read afterwards (undefined if it has gone since). */
  async #together(batch: NewRun[]): Promise<Array<Created | undefined> | Undecided> {
    const inserted = await this.db.transact<boolean[] | Undecided>(true, "the new runs", batch[0]!.run.id, "retry", true, async (client, tx) => {
      if (tx.maybeCommitted) return "maybe-committed";
      const { conn } = await this.db.connect();
      const results = await conn.transactOnce(client, batch.map((n) => n.statement).join("; "), tx);
      if (results === undefined) return "refused";
      if (results.length !== batch.length) throw new Error(`steplog internal: ${results.length} results for ${batch.length} new runs`);
      return results.map((r) => (r.rows[0] as { inserted: number }).inserted === 1);
    });
    if (inserted === undefined || typeof inserted === "string") return inserted ?? "refused";
    return Promise.all(
      batch.map(async (n, i): Promise<Created | undefined> => {
        if (inserted[i]) return { runId: n.run.id, epoch: 1, attempt: n.attempt.number, expiresAt: n.lease.expiresAt };
        const existing = await this.db.read(undefined, (client) => this.db.sql.loadRun(client, n.run.id));
        return existing ? { exists: existing.run } : undefined;
      }),
    );
  }
}
