/**
 * The statements of a batch that goes to the server in one round trip: BEGIN, the lease lock,
 * then each write as one statement that changes a row only while its run's lease is live (the
 * epoch it was written under, an attempt holding it), then COMMIT, all in one query string.
 *
 * A query string carries no parameters, so values are written as literals: strings as E''
 * literals (backslashes and quotes escaped, so they read the same whatever
 * standard_conforming_strings says), integers as digits, null with its column's type. A write
 * that does not fit — another kind of write, a string holding a NUL (the protocol ends a query
 * string at the first NUL), a number that is not a safe integer — makes the batch go the usual
 * way, a statement at a time with parameters.
 */

import { literal } from "./connection.js";
import { STEP_INSERT_COLUMNS } from "./sql.js";
import type { AttemptWrite } from "./write-queue.js";

/** A value as an SQL literal, or undefined when it cannot be written as one. */
function sqlValue(value: string | number | null, type: "text" | "integer" | "bigint"): string | undefined {
  if (value === null) return `NULL::${type}`;
  if (typeof value === "number") return type !== "text" && Number.isSafeInteger(value) ? String(value) : undefined;
  return type === "text" && !value.includes("\0") ? literal(value) : undefined;
}

/** `values` as literals, or undefined if any cannot be one. */
function sqlValues(values: Array<[string | number | null, "text" | "integer" | "bigint"]>): string[] | undefined {
  const out: string[] = [];
  for (const [value, type] of values) {
    const text = sqlValue(value, type);
    if (text === undefined) return undefined;
    out.push(text);
  }
  return out;
}

/** True while the run's lease is the one the write was made under. */
function live(s: string, runId: string, epoch: number): string {
  return `EXISTS (SELECT 1 FROM ${s}.leases WHERE run_id = ${literal(runId)} AND epoch = ${epoch} AND attempt IS NOT NULL)`;
}

/**
 * The write as one statement that affects exactly one row when it applies, or undefined when it
 * cannot go in a one-round-trip batch (an ending, an outcome that consumes an event, a value that
 * cannot be a literal).
 */
export function oneTripStatement(s: string, write: AttemptWrite): string | undefined {
  const { runId, epoch } = write.fence;
  if (!Number.isSafeInteger(epoch) || runId.includes("\0")) return undefined;
  switch (write.kind) {
    case "intent": {
      const t = write.step;
      const values = sqlValues([
        [t.runId, "text"],
        [t.seq, "integer"],
        [t.attempt, "integer"],
        [t.key, "text"],
        [t.name, "text"],
        [t.status, "text"],
        [t.effect, "text"],
        [t.idempotencyKey, "text"],
        [t.value, "text"],
        [t.error, "text"],
        [t.version, "text"],
        [t.intendedAt, "bigint"],
        [t.endedAt, "bigint"],
        [t.calls, "integer"],
        [t.resolution, "text"],
        [t.usage, "text"],
        [epoch, "bigint"],
      ]);
      if (values === undefined || t.runId !== runId) return undefined;
      return `INSERT INTO ${s}.steps (${STEP_INSERT_COLUMNS})
        SELECT ${values.join(", ")} WHERE ${live(s, runId, epoch)} ON CONFLICT (run_id, seq) DO NOTHING`;
    }
    case "outcome": {
      const o = write.outcome;
      if (o.consumes) return undefined;
      const v = sqlValues([
        [o.status, "text"],
        [o.value, "text"],
        [o.error, "text"],
        [o.endedAt, "bigint"],
        [o.calls, "integer"],
        [o.resolution, "text"],
        [o.usage, "text"],
        [o.seq, "integer"],
      ]);
      if (v === undefined) return undefined;
      return `UPDATE ${s}.steps SET status = ${v[0]}, value = ${v[1]}, error = ${v[2]}, ended_at = ${v[3]}, calls = ${v[4]}, resolution = ${v[5]},
        usage = ${v[6]}, written_epoch = ${epoch}, written_at = clock_timestamp()
        WHERE run_id = ${literal(runId)} AND seq = ${v[7]} AND status = 'intended' AND ${live(s, runId, epoch)}`;
    }
    case "renew":
      if (!Number.isSafeInteger(write.expiresAt) || !Number.isSafeInteger(write.now)) return undefined;
      return `UPDATE ${s}.leases SET expires_at = ${write.expiresAt}, heartbeat_at = ${write.now}
        WHERE run_id = ${literal(runId)} AND epoch = ${epoch} AND attempt IS NOT NULL`;
    case "end":
      return undefined;
  }
}
