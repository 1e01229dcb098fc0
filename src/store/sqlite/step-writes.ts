/**
 * The SQLite store's hot path: a step's intent and its outcome, applied inside the batch's
 * transaction (batch-writer.ts) as one statement each with positional parameters, after the
 * run's fence (checked once per run, see the fence generation in writes.ts).
 */

import type { Effect, Fence, StepOutcome, StepRow } from "../types.js";
import type { SqliteStatement } from "./drivers/connection.js";
import type { Statements } from "./sql.js";
import type { SqliteWrites } from "./writes.js";

/** A step's intent: its row, in the chunk the run's intents go in, after the run's fence (checked once, see writes.ts). */
export function applyIntent(writes: SqliteWrites, stmts: Statements, fence: Fence, s: StepRow): void {
  const slot = writes.fencedSlot(fence, "intent");
  const num = slot === null ? null : slot.num;
  const chunk = slot === null ? null : writes.chunkFor(slot, fence.runId, s.seq, s.key);
  let rowid: number;
  const common = s.status === "intended" && s.value === null && s.error === null && s.endedAt === null && s.calls === 0 && s.usage === null;
  const intent = common && s.resolution === null ? intentStatement(stmts, s.effect) : undefined;
  if (intent !== undefined) {
    rowid = intent.run(num, chunk, fence.runId, s.seq, s.attempt, s.key, s.name, s.idempotencyKey, s.version, s.intendedAt, s.position)
      .lastInsertRowid as number;
  } else if (common) {
    // An intent with its input recorded (the resolution): 13 values bound instead of 19.
    rowid = stmts.insertIntentWithResolution.run(
      num,
      chunk,
      fence.runId,
      s.seq,
      s.attempt,
      s.key,
      s.name,
      s.idempotencyKey,
      s.version,
      s.intendedAt,
      s.position,
      s.effect,
      s.resolution,
    ).lastInsertRowid as number;
  } else {
    rowid = stmts.insertStepAt.run(
      num,
      chunk,
      fence.runId,
      s.seq,
      s.attempt,
      s.key,
      s.name,
      s.status,
      s.effect,
      s.idempotencyKey,
      s.value,
      s.error,
      s.version,
      s.intendedAt,
      s.endedAt,
      s.calls,
      s.resolution,
      s.usage,
      s.position,
    ).lastInsertRowid as number;
  }
  if (slot !== null) slot.intended(s.seq, rowid, chunk!, s.resolution);
}

/** A step's outcome: its open intent's row, updated where it is found first. */
export function applyOutcome(writes: SqliteWrites, stmts: Statements, fence: Fence, o: StepOutcome): void {
  const slot = writes.fencedSlot(fence, "outcome");
  if (o.consumes) {
    const taken = stmts.consumeEvent.run({ runId: fence.runId, seq: o.consumes.eventSeq, by: o.consumes.by }).changes;
    if (taken !== 1) throw new Error(`steplog internal: event ${o.consumes.eventSeq} of run ${fence.runId} was consumed already`);
  }
  const num = slot === null ? null : slot.num;
  // Where the row is looked for: the row its intent was inserted at, if this connection
  // inserted it last; then the chunk the run's intents go in now; then every chunk of the run
  // (hints first, checked against run and seq: see RunSlot); last, the run's rows without one.
  const chunk = slot === null || slot.chunk === 0 ? null : slot.chunk;
  let changed: number;
  // The common success: nothing to record but its value (a resolution the intent wrote as it is,
  // a step's input, is left in the row as the succeeded statements leave it).
  const resolutionAsWritten = o.resolution === null || (slot !== null && slot.lastSeq === o.seq && o.resolution === slot.lastResolution);
  if (o.status === "succeeded" && o.error === null && resolutionAsWritten && o.usage === null) {
    changed = slot !== null && slot.lastSeq === o.seq ? stmts.outcomeSucceededAtRow.run(o.value, o.endedAt, o.calls, slot.lastRowid, num, o.seq).changes : 0;
    if (changed !== 1 && chunk !== null) changed = stmts.outcomeSucceededInChunk.run(o.value, o.endedAt, o.calls, chunk, num, o.seq).changes;
    if (changed !== 1) changed = stmts.outcomeSucceeded.run(o.value, o.endedAt, o.calls, num, num, o.seq).changes;
  } else {
    changed = chunk === null ? 0 : stmts.outcomeInChunk.run(o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, chunk, num, o.seq).changes;
    if (changed !== 1) changed = stmts.outcome.run(o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, num, num, o.seq).changes;
  }
  // A row an older version of steplog wrote without a chunk (a cut-off step a continue settles).
  if (changed !== 1)
    changed = stmts.outcomeUnchunked.run(o.status, o.value, o.error, o.endedAt, o.calls, o.resolution, o.usage, fence.runId, num, o.seq).changes;
  if (changed !== 1) throw new Error(`steplog internal: outcome for seq ${o.seq} of run ${fence.runId} has no open intent`);
  if (o.spend !== undefined) for (const id of o.spend.runs) stmts.addSpend.run(o.spend.usd, o.spend.tokens, id);
}

/** The common intent's statement for an effect (a switch: most steps are idempotent, and a literal compares fastest). */
function intentStatement(stmts: Statements, effect: Effect): SqliteStatement | undefined {
  switch (effect) {
    case "idempotent":
      return stmts.insertIntentIdempotent;
    case "read":
      return stmts.insertIntentRead;
    case "compensatable":
      return stmts.insertIntentCompensatable;
    case "irreversible":
      return stmts.insertIntentIrreversible;
    default:
      return undefined;
  }
}
