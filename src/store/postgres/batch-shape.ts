/**
 * The one place the Postgres store chooses how a batch of attempt writes is sent (the
 * statement shape). The first three shapes are one round trip, each write as statements that
 * change rows only under its live lease (one-trip.ts, prepared-batch.ts), so a stale write
 * changes nothing while the others commit; the last is the usual way, a query at a time.
 */

import type { AttemptWrite } from "./attempt-write.js";
import { oneTripStatements, setIntentStatement, setOutcomeStatement } from "./one-trip.js";
import { preparedBatch, type PreparedQuery } from "./prepared-batch.js";

type Intent = Extract<AttemptWrite, { kind: "intent" }>;
type Outcome = Extract<AttemptWrite, { kind: "outcome" }>;

export type BatchShape =
  /** One prepared statement (prepared-batch.ts), autocommitted. */
  | { kind: "prepared"; query: PreparedQuery }
  /**
   * One query string: the lease lock, every intent in one set statement and every outcome in
   * another (their indexes in `statements`, counting the lock as 0; -1 when none), then each
   * renewal's and ending's statements (`decisive[i]`: the index of write i's last statement,
   * -1 for a step write).
   */
  | { kind: "set"; statements: string[]; intentAt: number; outcomeAt: number; decisive: number[] }
  /** One query string: the lease lock, then each write's own statements (`decisive[i]` as above). */
  | { kind: "each"; statements: string[]; decisive: number[] }
  /** BEGIN and the lease lock, then each write's own queries with parameters (batch-writer.ts). */
  | { kind: "usual" };

const USUAL: BatchShape = { kind: "usual" };

/**
 * How to send `writes` (schema `s`). In order of preference:
 *
 * - **prepared**: intents and outcomes only, in a form prepared-batch.ts can bind — the common
 *   batch: a sequential step's outcome and the next intent, or many runs' steps at once.
 * - **set**: at least two intents and outcomes beside renewals and endings, and no ending before
 *   a step write of its own run (the set statements run first, so that write would no longer find
 *   the lease released).
 * - **each**: a batch the set statements would reorder, or with fewer than two step writes (an
 *   attempt's last outcome and its ending), or whose set statements cannot be built.
 * - **usual**: a retry after a COMMIT that got no reply (`retrying`: each write looks for its own
 *   effect first), or a write that cannot be sent as one-trip statements (an outcome consuming an
 *   event, a value that cannot be a literal). A one-trip shape that comes back without an answer
 *   (the server refused a statement, or the sequential step's statement applied nothing) is sent
 *   the usual way too: batch-writer.ts then tells each write why.
 */
export function batchShape(s: string, writes: readonly AttemptWrite[], retrying: boolean): BatchShape {
  if (retrying) return USUAL;
  const ended = new Set<string>();
  let reordered = false;
  for (const w of writes) {
    if (w.kind === "end") ended.add(w.fence.runId);
    else if ((w.kind === "intent" || w.kind === "outcome") && ended.has(w.fence.runId)) reordered = true;
  }
  const intents = writes.filter((w): w is Intent => w.kind === "intent");
  const outcomes = writes.filter((w): w is Outcome => w.kind === "outcome");
  if (intents.length + outcomes.length === writes.length) {
    const query = preparedBatch(s, intents, outcomes);
    if (query) return { kind: "prepared", query };
  }
  if (reordered || intents.length + outcomes.length < 2) return eachShape(s, writes);
  const setIntents = intents.length ? setIntentStatement(s, intents) : "";
  const setOutcomes = outcomes.length ? setOutcomeStatement(s, outcomes) : "";
  if (setIntents === undefined || setOutcomes === undefined) return eachShape(s, writes);
  const statements: string[] = [];
  // Statement 0 is the lease lock; the set statements follow it.
  const intentAt = setIntents ? (statements.push(setIntents), statements.length) : -1;
  const outcomeAt = setOutcomes ? (statements.push(setOutcomes), statements.length) : -1;
  const decisive: number[] = [];
  for (const w of writes) {
    if (w.kind === "intent" || w.kind === "outcome") {
      decisive.push(-1);
      continue;
    }
    const its = oneTripStatements(s, w);
    if (its === undefined) return USUAL;
    statements.push(...its);
    decisive.push(statements.length);
  }
  return { kind: "set", statements, intentAt, outcomeAt, decisive };
}

function eachShape(s: string, writes: readonly AttemptWrite[]): BatchShape {
  const statements: string[] = [];
  const decisive: number[] = [];
  for (const w of writes) {
    const its = oneTripStatements(s, w);
    if (its === undefined) return USUAL;
    statements.push(...its);
    decisive.push(statements.length);
  }
  return { kind: "each", statements, decisive };
}
