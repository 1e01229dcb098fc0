/**
 * The transactions that change a run outside its attempt's writes: creating it, claiming it
 * (a new attempt takes its lease) and updating it (a send, a cancel, …), each one transaction
 * of its own (database.ts). After a COMMIT whose reply was lost, a creation or a claim is run
 * again and recognises its own first try; an update cannot tell its effect from another's, so
 * it is not run again.
 *
 * Claims use `FOR UPDATE SKIP LOCKED` on that row, and never report an existing run as
 * missing. When the row is locked, the run is read as one consistent snapshot (one statement):
 * - its lease is held: the run is busy (RUN_BUSY, naming the holder) at once. The lock belongs
 *   to the holder writing, to another worker taking the run over, or to a frozen holder's
 *   transaction; in each case a worker moves on instead of queueing behind it.
 * - its lease is free: another transaction is claiming or updating it (a send, say); the claim
 *   waits for the lock and `decide` judges what that transaction left.
 * `decide` runs once per claim, always under the lock (the engine's decide has side effects).
 */

import { taken as takenResult } from "../claim-result.js";
import { RUN_INSERT_COLUMNS, runInsertValues } from "../run-values.js";
import { claimVerdict } from "../state-machine.js";
import type { AttemptRow, ClaimJudge, ClaimResult, FlowQuery, Lease, LeaseRow, RunRow, RunUpdate, StoredRun } from "../types.js";
import type { PgClient, TxState } from "./connection.js";
import type { Database, Refused } from "./database.js";
import { newRunStatement } from "./one-trip.js";
import { num } from "./sql.js";

export async function createRun(
  db: Database,
  run: RunRow,
  attempt: AttemptRow,
  lease: { expiresAt: number; now: number },
  /** A batch holding this run sent its COMMIT and got no reply (new-runs.ts): it may exist already, as ours. */
  maybeCreated = false,
): Promise<Lease | { exists: RunRow }> {
  const s = db.sql.s;
  const ours = firstLease(run, attempt, lease);
  return (await db.transact(
    true,
    "the new run",
    run.id,
    "retry",
    true,
    async (client, tx) => {
      const conn = (await db.connect()).conn;
      const maybeCommitted = maybeCreated || tx.maybeCommitted;
      // In one round trip; a retry after a COMMIT with no reply goes the usual way (it looks for its own run).
      const oneTrip = maybeCommitted ? undefined : newRunStatement(s, run, attempt, lease);
      if (oneTrip !== undefined) {
        const results = await conn.transactOnce(client, oneTrip, tx);
        // Refused by the server (undefined): the usual way says what failed.
        if (results !== undefined) {
          if ((results[0]!.rows[0] as { inserted: number }).inserted === 1) return ours;
          return { exists: (await db.sql.loadRun(client, run.id))!.run };
        }
      }
      await conn.begin(client);
      const taken = await insertRunRow(db, client, run);
      if (taken) {
        const existing = (await db.sql.loadRun(client, taken.id))!;
        await conn.rollback(client);
        // Our own first try committed and only its reply was lost: the run is ours.
        if (maybeCommitted && isOurCreation(existing, run, attempt)) return ours;
        return { exists: existing.run };
      }
      await db.sql.insertAttempt(client, attempt, 1, null);
      await client.query(`INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, 1, $2, $3, $4)`, [
        run.id,
        attempt.number,
        lease.expiresAt,
        lease.now,
      ]);
      await conn.commit(client, tx);
      return ours;
    },
    maybeCreated,
  ))!;
}

/** The lease a new run's first attempt holds once its creation commits. */
export function firstLease(run: RunRow, attempt: AttemptRow, lease: { expiresAt: number }): Lease {
  return { runId: run.id, epoch: 1, attempt: attempt.number, expiresAt: lease.expiresAt };
}

/**
 * Insert the run row, unless a run takes its place (its id, or its dedupe key on a run that has
 * not ended, looked up under the key's lock): then that run, and nothing inserted.
 */
/** $1, $2, … for each of RUN_INSERT_COLUMNS. */
const RUN_PLACEHOLDERS = RUN_INSERT_COLUMNS.split(",")
  .map((_, i) => `$${i + 1}`)
  .join(", ");

async function insertRunRow(db: Database, client: PgClient, run: RunRow): Promise<RunRow | undefined> {
  const s = db.sql.s;
  if (run.dedupeKey != null) {
    await db.sql.lockKey(client, "dedupe", run.dedupeKey);
    const active = await db.sql.taken(client, run);
    if (active) return active;
  }
  const inserted = await client.query(
    `INSERT INTO ${s}.runs (${RUN_INSERT_COLUMNS})
     VALUES (${RUN_PLACEHOLDERS}) ON CONFLICT (id) DO NOTHING`,
    runInsertValues(run),
  );
  return inserted.rowCount === 0 ? await db.sql.taken(client, run) : undefined;
}

/** A run queued for its turn (flow control): its row and a free lease row (epoch 0), no attempt. */
export async function enqueueRun(db: Database, run: RunRow, now: number): Promise<{ queued: true } | { exists: RunRow }> {
  const s = db.sql.s;
  return (await db.transact(true, "the new run", run.id, "retry", true, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    const taken = await insertRunRow(db, client, run);
    if (taken) {
      await conn.rollback(client);
      // Our own first try committed and only its reply was lost: the run is ours.
      const ours = tx.maybeCommitted && taken.id === run.id && taken.createdAt === run.createdAt && taken.args === run.args && taken.attempts === 0;
      return ours ? { queued: true as const } : { exists: taken };
    }
    await client.query(`INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, 0, NULL, 0, $2)`, [run.id, now]);
    await conn.commit(client, tx);
    return { queued: true as const };
  }))!;
}

export async function claimRun(db: Database, runId: string, decide: ClaimJudge, flow?: FlowQuery): Promise<ClaimResult> {
  let taken: { attempt: AttemptRow; expiresAt: number } | undefined;
  /** A retry after a lost COMMIT reply: if our attempt holds the lease, the claim went through. */
  const ours = (tx: TxState, state: StoredRun): ClaimResult | undefined => {
    if (!tx.maybeCommitted || !taken || state.lease?.attempt !== taken.attempt.number || state.lease.expiresAt !== taken.expiresAt) return undefined;
    const mine = state.attempts.find((a) => a.number === taken!.attempt.number);
    if (!mine || !sameAttempt(mine, taken.attempt)) return undefined;
    return { kind: "taken", state, lease: { runId, epoch: state.lease.epoch, attempt: mine.number, expiresAt: state.lease.expiresAt } };
  };
  const result = await db.transact<ClaimResult | Refused>(false, "the new attempt", runId, "retry", false, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    const got = await client.query(db.sql.lockLeaseSkipLocked, [runId]);
    if (got.rows.length === 0) {
      // Locked by another transaction, or no such run: a snapshot tells which.
      const snapshot = await db.sql.loadRun(client, runId);
      if (!snapshot) {
        await conn.rollback(client);
        return { kind: "missing" };
      }
      const mineAlready = ours(tx, snapshot);
      if (mineAlready) {
        await conn.rollback(client);
        return mineAlready;
      }
      // The engine judges from the snapshot: a holder writing right now is alive (refused), else wait for the lock.
      const verdict = decide(snapshot, { whileWriting: true });
      if (verdict.kind === "refuse") {
        await conn.rollback(client);
        return { refused: verdict.error };
      }
      await db.lock(client, runId);
    }
    const current = await db.sql.loadRun(client, runId);
    if (!current) {
      await conn.rollback(client);
      return { kind: "missing" };
    }
    const mineAlready = ours(tx, current);
    if (mineAlready) {
      await conn.rollback(client);
      return mineAlready;
    }
    // Under the keys' locks until this transaction ends: no other claim with a key counts in between.
    if (flow) current.flow = await db.sql.flowFacts(client, runId, flow);
    const decision = claimVerdict(decide, current);
    if (decision.kind === "refuse") {
      if (decision.run) {
        await db.sql.patchRun(client, runId, decision.run);
        await conn.commit(client, tx);
      } else await conn.rollback(client);
      return { refused: decision.error };
    }
    const previous = current.lease;
    const epoch = (previous?.epoch ?? 0) + 1;
    const lease: LeaseRow = { runId, epoch, attempt: decision.attempt.number, expiresAt: decision.expiresAt, heartbeatAt: decision.now };
    await db.sql.patchRun(client, runId, decision.run);
    await db.sql.insertAttempt(client, decision.attempt, epoch, previous && previous.attempt !== null ? previous.expiresAt : null);
    await client.query(
      `INSERT INTO ${db.sql.s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, attempt = excluded.attempt, expires_at = excluded.expires_at, heartbeat_at = excluded.heartbeat_at`,
      [runId, epoch, lease.attempt, lease.expiresAt, lease.heartbeatAt],
    );
    taken = { attempt: decision.attempt, expiresAt: decision.expiresAt };
    await conn.commit(client, tx);
    return takenResult(current, decision, lease);
  });
  return (result as ClaimResult | undefined) ?? { kind: "missing" };
}

export async function updateRun<T>(db: Database, runId: string, decide: (current: StoredRun) => RunUpdate<T>): Promise<T | undefined> {
  // Not retried after a lost COMMIT reply: an update cannot tell its own effect from another's.
  const result = await db.transact<{ value: T | undefined } | Refused>(false, "the run update", runId, "fail", true, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    if (!(await db.lock(client, runId))) {
      await conn.rollback(client);
      return { value: undefined };
    }
    const current = (await db.sql.loadRun(client, runId))!;
    const update = decide(current);
    if (update.error) {
      await conn.rollback(client);
      return { refused: update.error };
    }
    const s = db.sql.s;
    const epoch = current.lease?.epoch ?? null;
    if (update.run) await db.sql.patchRun(client, runId, update.run);
    for (const { seq, patch } of update.updateSteps ?? []) await db.sql.patchStep(client, runId, seq, patch, epoch);
    for (const step of update.appendSteps ?? []) await db.sql.insertStep(client, step, epoch);
    for (const e of update.appendEvents ?? []) {
      await client.query(`INSERT INTO ${s}.events (run_id, seq, name, payload, sent_at, consumed_by, key) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        e.runId,
        e.seq,
        e.name,
        e.payload,
        e.sentAt,
        e.consumedBy,
        e.key ?? null,
      ]);
    }
    if (update.fenceOut) {
      await client.query(`UPDATE ${s}.leases SET epoch = epoch + 1, attempt = NULL, expires_at = 0, heartbeat_at = $2 WHERE run_id = $1`, [
        runId,
        update.fenceOut.now,
      ]);
    }
    await conn.commit(client, tx);
    return { value: update.result };
  });
  return result === undefined ? undefined : (result as { value: T | undefined }).value;
}

function sameAttempt(a: AttemptRow, b: AttemptRow): boolean {
  return (Object.keys(b) as Array<keyof AttemptRow>).every((k) => a[k] === b[k]);
}

function isOurCreation(existing: StoredRun, run: RunRow, attempt: AttemptRow): boolean {
  const first = existing.attempts[0];
  return (
    existing.run.createdAt === run.createdAt &&
    existing.run.args === run.args &&
    existing.run.workflow === run.workflow &&
    first !== undefined &&
    sameAttempt(first, attempt) &&
    existing.lease?.epoch === 1 &&
    num(existing.lease.attempt) === attempt.number
  );
}
