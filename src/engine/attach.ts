/**
 * Start or attach: what `start(workflow, args, { id, ifExists: "attach" })` does with an id that
 * exists. It checks that the run is the one this start asks for (the same workflow, the same
 * args), else refuses with RUN_EXISTS naming what differs; then the engine waits for an attempt
 * of it running in this process, or hands back the run as stored, read here the way engine.get
 * reads it. Attaching only observes: it starts no attempt and continues nothing.
 */

import { InvalidOptionError, RunExistsError } from "../base/errors.js";
import { onFirstUse } from "../base/on-first-use.js";
import { derivedStatus, holderGone, type Judge } from "../operations/views.js";
import type { Payloads } from "../payloads/payloads.js";
import { decodeValue } from "../payloads/values.js";
import type { RunResult } from "../steps/attempt.js";
import type { RunRow, StoredRun } from "../store/types.js";
import { shownWaitingFor, type StoredWait } from "../workflow/step-resolution.js";

export type IfExists = "attach" | "refuse";

/** node:util, required when a start first finds its run: its ES module form costs an import of steplog several ms on Node 24. */
const nodeUtil = onFirstUse<typeof import("node:util")>("node:util");

/** start's `ifExists`: "refuse" (the default) or "attach"; anything else is INVALID_OPTION. */
export function checkIfExists(value: unknown, where: string, runId: string): IfExists {
  if (value === undefined) return "refuse";
  if (value === "attach" || value === "refuse") return value;
  const shown = typeof value === "string" ? JSON.stringify(value) : typeof value === "object" && value !== null ? "an object" : String(value);
  throw new InvalidOptionError(`${where}: ifExists must be "attach" or "refuse" (the default), got ${shown}.`, { runId });
}

/**
 * Refuse (RUN_EXISTS, naming what differs) unless `existing` is a run of `workflow` recorded
 * with the args this start was given. `givenPlain` is those args encoded to readable tagged JSON
 * (Payloads.encode's `plain`), before any codec.
 *
 * The args are compared as decoded values, deeply, not as stored text: with a codec the stored
 * text is sealed with a fresh random IV each time (and maybe under another key since), so the
 * same args never give the same text. Both sides are decoded from the same tagged JSON, so a
 * Date, a Map, a BigInt or -0 compares as itself, and the order of an object's keys does not
 * matter. Recorded args this engine cannot open are refused as a continue would
 * (CODEC_KEY_MISSING), not taken as different.
 */
export async function checkSameRun(existing: RunRow, workflow: string, givenPlain: string, payloads: Payloads): Promise<void> {
  if (existing.workflow !== workflow) {
    throw new RunExistsError(existing.id, existing.status, { what: "workflow", recorded: existing.workflow, given: workflow });
  }
  const at = firstDifference(await payloads.decode(existing.args), decodeValue(givenPlain));
  if (at !== undefined) throw new RunExistsError(existing.id, existing.status, { what: "args", at });
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && [Object.prototype, null].includes(Object.getPrototypeOf(value) as object | null);

/** The path ("$", "$.order.items[2]") of the first place where the two differ, or undefined when they are deeply equal. */
export function firstDifference(recorded: unknown, given: unknown, path = "$"): string | undefined {
  if (nodeUtil().isDeepStrictEqual(recorded, given)) return undefined;
  if (Array.isArray(recorded) && Array.isArray(given)) {
    for (let i = 0; i < Math.min(recorded.length, given.length); i++) {
      const found = firstDifference(recorded[i], given[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return recorded.length === given.length ? path : `${path} (${recorded.length} items recorded, ${given.length} given)`;
  }
  if (isPlainObject(recorded) && isPlainObject(given)) {
    for (const key of new Set([...Object.keys(recorded), ...Object.keys(given)])) {
      const child = IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!Object.hasOwn(recorded, key)) return `${child} (not in the recorded args)`;
      if (!Object.hasOwn(given, key)) return `${child} (missing from this start's args)`;
      const found = firstDifference(recorded[key], given[key], child);
      if (found !== undefined) return found;
    }
  }
  return path;
}

/**
 * A start's result when it found the run rather than made it: a copy (an attempt's result is
 * shared with the caller that started it) marked `attached: true`.
 */
export function markAttached(result: RunResult): RunResult {
  return { ...result, attached: true };
}

/**
 * The run as stored, in the shape start resolves with: `status` is how its last attempt ended as
 * engine.get shows it (`interrupted` when it has no ending and its owner is gone, `running` while
 * it runs elsewhere), `runStatus` the run's status as engine.get derives it, and `value`,
 * `error` and `waitingFor` the run's own.
 */
export async function storedResult(stored: StoredRun, judge: Judge, payloads: Payloads): Promise<RunResult> {
  const { run, lease, attempts } = stored;
  const holder = lease?.attempt == null ? undefined : attempts.find((a) => a.number === lease.attempt);
  const last = attempts.reduce<(typeof attempts)[number] | undefined>(
    (latest, a) => (latest === undefined || a.number > latest.number ? a : latest),
    undefined,
  );
  const live = holder !== undefined && !holderGone(lease, holder, judge) ? holder.number : undefined;
  const result: RunResult = {
    id: run.id,
    // No attempt yet: a run queued for its turn (flow control) waits.
    status: last === undefined ? "waiting" : (last.ending ?? (last.number === live ? "running" : "interrupted")),
    runStatus: derivedStatus(run, lease, holder ?? last, judge),
    attempt: last?.number ?? run.attempts,
  };
  if (run.waitingFor !== null) result.waitingFor = shownWaitingFor(JSON.parse(run.waitingFor) as StoredWait);
  if (run.value !== null) result.value = await payloads.decode(run.value);
  const error = run.error ?? last?.error ?? null;
  if (error !== null) result.error = await payloads.decodeError(error);
  return result;
}
