/**
 * Which failed steps the workflow handled. A step's own failure (its function threw, or a wait
 * timed out or got a payload its schema rejects) is thrown into the workflow's code; when the
 * code caught it and went on, that failure is as settled as a success: a continue throws the
 * recorded error again instead of calling the function, and the code's handler runs as before.
 * Only the failure that ended its attempt (or one cut short by the attempt's end) is redone.
 *
 * Judged from the records alone, so a continue and a view agree. A failure is handled when no
 * attempt since it was recorded ended by it (an attempt's error names the step it ended in, and
 * a later attempt that threw it again and did not catch it names it too), and either
 * - the attempt that recorded it ended, and the failure is not that attempt's own ending written
 *   on the step (a deadline, a cancel, a park cutting the step short), or
 * - that attempt crashed (no ending) after entering another step once the failure was recorded:
 *   the code went on past it.
 */

import type { ErrorInfo } from "./errors.js";
import type { Payloads } from "./payloads.js";
import type { AttemptRow, StepRow, StoredRun } from "./store/types.js";

/** Endings whose error names the step that brought them about. */
const ENDED_BY_A_STEP = new Set(["failed", "stopped", "timed-out", "cancelled"]);

/** A failed row whose error was thrown into the workflow's code (not a settled cut-off or a person's redo). */
export function thrownToWorkflow(row: StepRow): boolean {
  if (row.status !== "failed") return false;
  if (row.resolution === null) return true;
  return (JSON.parse(row.resolution) as { wait?: unknown }).wait !== undefined;
}

/** Decoded errors: each attempt's by its number, each step row's by its seq (missing where unreadable). */
export interface DecodedErrors {
  attempts: ReadonlyMap<number, ErrorInfo>;
  steps: ReadonlyMap<number, ErrorInfo>;
}

/** The current row of each key that was thrown into the workflow (the candidates). */
function candidates(steps: readonly StepRow[]): StepRow[] {
  const latest = new Map<string, StepRow>();
  for (const row of steps) latest.set(row.key, row);
  return [...latest.values()].filter(thrownToWorkflow);
}

/**
 * The step keys whose current row is a failure the workflow handled. An error that could not be
 * read leaves its failure not handled: it is redone, as it was before steplog knew better.
 */
export function handledFailures(steps: readonly StepRow[], attempts: readonly AttemptRow[], errors: DecodedErrors): Set<string> {
  const handled = new Set<string>();
  for (const row of candidates(steps)) if (wasHandled(row, steps, attempts, errors)) handled.add(row.key);
  return handled;
}

/** handledFailures for a stored run, decoding the errors it needs (through the engine's codec). */
export async function findHandledFailures(stored: Pick<StoredRun, "steps" | "attempts">, payloads: Payloads): Promise<Set<string>> {
  const rows = candidates(stored.steps);
  if (rows.length === 0) return new Set();
  const attempts = new Map<number, ErrorInfo>();
  const steps = new Map<number, ErrorInfo>();
  const decode = async (text: string | null): Promise<ErrorInfo | undefined> => {
    if (text === null) return undefined;
    try {
      return await payloads.decodeError(text);
    } catch {
      return undefined;
    }
  };
  for (const a of stored.attempts) {
    const info = await decode(a.error);
    if (info) attempts.set(a.number, info);
  }
  for (const row of rows) {
    const info = await decode(row.error);
    if (info) steps.set(row.seq, info);
  }
  return handledFailures(stored.steps, stored.attempts, { attempts, steps });
}

function wasHandled(row: StepRow, steps: readonly StepRow[], attempts: readonly AttemptRow[], errors: DecodedErrors): boolean {
  // Every attempt since (this one included) that ended: none may have ended by this step's error.
  for (const a of attempts) {
    if (a.number < row.attempt || a.ending === null) continue;
    if (a.error !== null && !errors.attempts.has(a.number)) return false;
    if (errors.attempts.get(a.number)?.step === row.key && ENDED_BY_A_STEP.has(a.ending)) return false;
  }
  const own = attempts.find((a) => a.number === row.attempt);
  if (!own || own.ending === null) {
    // Crashed in the attempt that recorded it: handled if the code entered another step afterwards.
    return row.endedAt !== null && steps.some((other) => other.attempt === row.attempt && other.seq > row.seq && other.intendedAt >= row.endedAt!);
  }
  const info = errors.steps.get(row.seq);
  if (row.error !== null && !info) return false;
  return !(info && cutShort(info, own, errors.attempts.get(own.number)));
}

/** The failure is the attempt's own ending recorded on the step (a deadline, a cancel, a park, a stop), not the step's. */
function cutShort(info: ErrorInfo, attempt: AttemptRow, ending: ErrorInfo | undefined): boolean {
  if (info.code === "WAITING") return attempt.ending === "waiting";
  return ending !== undefined && info.name === ending.name && info.message === ending.message;
}
