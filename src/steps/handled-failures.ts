/**
 * Which failed steps the workflow handled. A step's own failure (its function threw, or a wait
 * timed out or got a payload its schema rejects) is thrown into the workflow's code; when the
 * code caught it and went on, that failure is as settled as a success: a continue throws the
 * recorded error again instead of calling the function, and the code's handler runs as before.
 * Only a failure the code did not go on from is redone.
 *
 * Judged from the records alone, so a continue and a view agree. When a failure is thrown into
 * the code, its row records how many steps its attempt had entered by then
 * (`resolution.thrown.entered`). A failure is handled when
 * - the code went on past it: its attempt entered another step after it was thrown (a row of
 *   that attempt at a later position), and
 * - no attempt since it was recorded ended by it: an ended attempt's error names the step it
 *   ended in, and one that threw it again and did not catch it names it too.
 * So a failure beside which the code was still waiting for other steps (Promise.all,
 * allSettled) and then gave up is not handled, nor is one after which the code threw an error
 * of its own. A failure written by the attempt's own end (a deadline, a cancel, a park cutting
 * the step short) was never thrown into the code, and rows of an older steplog carry no mark:
 * neither counts as handled, and both are redone, as before.
 */

import type { ErrorInfo } from "../base/errors.js";
import type { Payloads } from "../payloads/payloads.js";
import type { AttemptRow, StepRow, StoredRun } from "../store/types.js";
import { parseResolution, type Thrown } from "../workflow/step-resolution.js";
import { NO_KEYS } from "./state.js";
import { latestRows } from "../store/latest-rows.js";

/** Endings whose error names the step that brought them about. */
const ENDED_BY_A_STEP = new Set(["failed", "stopped", "timed-out", "cancelled"]);

/** What a failed row's resolution holds when its error was thrown into the workflow's code. */
export type { Thrown };

/** The `thrown` mark of a failed row, if its error was thrown into the workflow's code. */
export function thrownMark(row: StepRow): Thrown | undefined {
  if (row.status !== "failed") return undefined;
  const { thrown } = parseResolution(row.resolution);
  return typeof thrown?.entered === "number" && typeof thrown.attempt === "number" ? thrown : undefined;
}

/** The current row of each key whose failure was thrown into the workflow (the candidates). */
function candidates(steps: readonly StepRow[]): Array<{ row: StepRow; thrown: Thrown }> {
  const out: Array<{ row: StepRow; thrown: Thrown }> = [];
  for (const row of latestRows(steps, (r) => r.status === "failed")) {
    const thrown = thrownMark(row);
    if (thrown) out.push({ row, thrown });
  }
  return out;
}

/**
 * The step keys whose current row is a failure the workflow handled. `errors` holds each
 * attempt's decoded error by number; one that could not be read leaves the failures since not
 * handled: they are redone, as they were before steplog knew better.
 */
export function handledFailures(steps: readonly StepRow[], attempts: readonly AttemptRow[], errors: ReadonlyMap<number, ErrorInfo>): Set<string> {
  const handled = new Set<string>();
  for (const { row, thrown } of candidates(steps)) if (wasHandled(row, thrown, steps, attempts, errors)) handled.add(row.key);
  return handled;
}

/**
 * handledFailures for a stored run, decoding the attempts' errors it needs (through the engine's
 * codec). A run with no failure thrown into its code (a new run, most continues) is answered at
 * once, without a promise.
 */
export function findHandledFailures(stored: Pick<StoredRun, "steps" | "attempts">, payloads: Payloads): ReadonlySet<string> | Promise<ReadonlySet<string>> {
  const rows = candidates(stored.steps);
  if (rows.length === 0) return NO_KEYS;
  return decodeThenJudge(stored, payloads, rows);
}

async function decodeThenJudge(
  stored: Pick<StoredRun, "steps" | "attempts">,
  payloads: Payloads,
  rows: Array<{ row: StepRow; thrown: Thrown }>,
): Promise<ReadonlySet<string>> {
  const first = Math.min(...rows.map(({ thrown }) => thrown.attempt));
  const errors = new Map<number, ErrorInfo>();
  for (const a of stored.attempts) {
    if (a.number < first || a.error === null) continue;
    try {
      errors.set(a.number, await payloads.decodeError(a.error));
    } catch {
      // Unreadable (a missing key): the failures it might name are left not handled.
    }
  }
  return handledFailures(stored.steps, stored.attempts, errors);
}

function wasHandled(row: StepRow, thrown: Thrown, steps: readonly StepRow[], attempts: readonly AttemptRow[], errors: ReadonlyMap<number, ErrorInfo>): boolean {
  // The code went on past it: a step entered after the error was thrown.
  const wentOn = steps.some((other) => other.attempt === thrown.attempt && other.seq !== row.seq && (other.position ?? -1) >= thrown.entered);
  if (!wentOn) return false;
  // No ended attempt since (that one included) ended by it.
  for (const a of attempts) {
    if (a.number < thrown.attempt || a.ending === null) continue;
    if (a.error !== null && !errors.has(a.number)) return false;
    if (errors.get(a.number)?.step === row.key && ENDED_BY_A_STEP.has(a.ending)) return false;
  }
  return true;
}
