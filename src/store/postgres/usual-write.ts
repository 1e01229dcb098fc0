/**
 * The usual way of the Postgres store's attempt writes (see batch-shape.ts for when a batch goes
 * so): each write as its own queries with parameters, checked first against its run's lease row,
 * locked at the batch's start. A write whose lease is no longer its attempt's is refused
 * (LEASE_LOST) and writes nothing. A write run again after a COMMIT that got no reply
 * (`retrying`) first looks for its own effect — an intent row exactly like it, an outcome
 * already holding exactly that outcome, its ending already recorded — and counts it as done,
 * so nothing is written twice and nothing is lost. Also what tells a one-trip write that changed
 * no row why it did not (its lease is gone, or its row was not as expected).
 */

import { LeaseLostError } from "../../base/errors.js";
import type { Spend, StepRow } from "../types.js";
import type { PgClient } from "./connection.js";
import type { AttemptWrite } from "./attempt-write.js";
import { num, type Sql } from "./sql.js";
import { insertStreamRecords } from "./stream-records.js";

/** An outcome's spend added to the runs it names, in the outcome's transaction (a retried outcome found done added it then). */
async function addSpend(client: PgClient, s: string, spend: Spend | undefined): Promise<void> {
  if (spend === undefined) return;
  await client.query(`UPDATE ${s}.runs SET spent_usd = spent_usd + $2, spent_tokens = spent_tokens + $3 WHERE id = ANY($1::text[])`, [
    spend.runs,
    spend.usd,
    spend.tokens,
  ]);
}

/** A run's lease row as the batch locked it. */
export type LeaseState = { epoch: number; attempt: number | null };

/** Why a one-round-trip write changed no row. */
export async function notApplied(client: PgClient, s: string, write: AttemptWrite, leases: Map<string, LeaseState>): Promise<unknown> {
  const { runId, epoch } = write.fence;
  const lease = leases.get(runId);
  if (lease === undefined || lease.epoch !== epoch || lease.attempt === null) return leaseLost(write);
  if (write.kind === "intent") {
    // Only a retried write finds its own row; anything else at this seq is a real conflict.
    return (await sameStep(client, s, write.step)) ? undefined : intentConflict(write.step);
  }
  if (write.kind === "outcome") return noOpenIntent(runId, write.outcome.seq);
  return leaseLost(write);
}

export async function applyWrite(client: PgClient, sql: Sql, write: AttemptWrite, leases: Map<string, LeaseState>, retrying: boolean): Promise<void> {
  const { runId, epoch } = write.fence;
  const lease = leases.get(runId);
  const live = lease !== undefined && lease.epoch === epoch && lease.attempt !== null;
  const s = sql.s;

  switch (write.kind) {
    case "intent": {
      const { step } = write;
      if (!live) {
        if (retrying && (await sameStep(client, s, step))) return;
        throw leaseLost(write);
      }
      if (await sql.insertStep(client, step, epoch, true)) return;
      // Only a retried write finds its own row; anything else at this seq is a real conflict.
      if (await sameStep(client, s, step)) return;
      throw intentConflict(step);
    }
    case "outcome": {
      const { consumes, spend, ...fields } = write.outcome;
      // The common case in one round trip: the lease is ours and the intent is open.
      if (live && !consumes) {
        const updated = await client.query(
          `UPDATE ${s}.steps SET status = $3, value = $4, error = $5, ended_at = $6, calls = $7, resolution = $8, usage = $9,
             written_epoch = $10, written_at = clock_timestamp()
           WHERE run_id = $1 AND seq = $2 AND status = 'intended'`,
          [runId, fields.seq, fields.status, fields.value, fields.error, fields.endedAt, fields.calls, fields.resolution, fields.usage, epoch],
        );
        if (updated.rowCount === 1) return addSpend(client, s, spend);
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
      return addSpend(client, s, spend);
    }
    case "stream": {
      // A retried append whose first try committed finds its records (seq is theirs alone).
      const last = write.records.at(-1)!;
      const found = async () =>
        retrying &&
        ((await client.query(`SELECT 1 FROM ${s}.stream_records WHERE run_id = $1 AND stream = $2 AND seq = $3`, [runId, last.stream, last.seq])).rowCount ??
          0) > 0;
      if (!live) {
        if (await found()) return;
        throw leaseLost(write);
      }
      if (await found()) return;
      // One statement for all the records: a burst of chunks is one append.
      await insertStreamRecords(client, s, write.records);
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
      await sql.patchRun(client, runId, end.run);
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
export async function sameStep(client: PgClient, s: string, step: StepRow): Promise<boolean> {
  const { rows } = await client.query(
    `SELECT row_to_json(t) AS step FROM (SELECT run_id AS "runId", seq, attempt, key, name, status, effect, idempotency_key AS "idempotencyKey",
       value, error, version, intended_at AS "intendedAt", ended_at AS "endedAt", calls, resolution, usage, position
     FROM ${s}.steps WHERE run_id = $1 AND seq = $2) t`,
    [step.runId, step.seq],
  );
  const found = rows[0]?.step as Record<string, unknown> | undefined;
  if (!found) return false;
  return Object.entries(step).every(([k, v]) => found[k] === v);
}

const WRITE_NAMES: Record<AttemptWrite["kind"], string> = {
  intent: "intent",
  outcome: "outcome",
  renew: "lease renewal",
  end: "attempt ending",
  stream: "stream write",
};

/** A write refused because its attempt no longer holds the run's lease. */
export function leaseLost(write: AttemptWrite): LeaseLostError {
  const { runId, epoch } = write.fence;
  return new LeaseLostError(runId, undefined, `${WRITE_NAMES[write.kind]} refused: the lease epoch is no longer ${epoch}`);
}

export function intentConflict(step: StepRow): Error {
  return new Error(`steplog internal: step seq ${step.seq} of run ${step.runId} was written already by another intent`);
}

export function noOpenIntent(runId: string, seq: number): Error {
  return new Error(`steplog internal: outcome for seq ${seq} of run ${runId} has no open intent`);
}

export function leaseMap(rows: Array<{ run_id: string; epoch: unknown; attempt: number | null }>): Map<string, LeaseState> {
  return new Map(rows.map((r) => [r.run_id, { epoch: num(r.epoch), attempt: r.attempt }]));
}

/** A row a batch wrote: its run, its seq and the epoch it was written under (two attempts of one run may write one seq in a batch). */
export function applied(runId: string, seq: unknown, epoch: unknown): string {
  return `${runId}\0${num(seq)}\0${num(epoch)}`;
}

export type StepWrite = Extract<AttemptWrite, { kind: "intent" | "outcome" }>;

/** The row an intent or an outcome writes, as `applied` names it. */
export function rowOf(w: StepWrite): string {
  return applied(w.fence.runId, w.kind === "intent" ? w.step.seq : w.outcome.seq, w.fence.epoch);
}
