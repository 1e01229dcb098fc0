/**
 * What is checked of a run before an attempt may begin on it: its args against the workflow's
 * schema (at start, and before every claim), and that every stored record is one the engine's
 * codec can open (inside the claim, so such a run is refused before any attempt is counted); and
 * the deadline a start, a continue or a child run is given.
 */

import type { Clock } from "../base/clock.js";
import { CodecKeyMissingError, InvalidOptionError, StoreUnreadableError } from "../base/errors.js";
import type { Payloads } from "../payloads/payloads.js";
import type { StoredRun } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";
import { validate, type Validation } from "../workflow/value-schemas.js";

/** The args checked by the workflow's args schema, if it has one; without one, no promise (a start awaits nothing it need not). */
export function checkArgs(workflow: Workflow, args: unknown): Validation<unknown> | Promise<Validation<unknown>> {
  return workflow.args ? validate(workflow.args, args) : { ok: true, value: args };
}

/** A CodecKeyMissingError for the first record of the run this engine's codec cannot open, if any. */
export function unopenable(current: StoredRun, payloads: Payloads, location: string): CodecKeyMissingError | StoreUnreadableError | undefined {
  const runId = current.run.id;
  const damaged = (what: string, reason: string) =>
    new StoreUnreadableError(
      location,
      `run ${JSON.stringify(runId)}: ${what} does not decode (${reason}), so the store is damaged there`,
      undefined,
      false,
      `The run was not continued and nothing was written. Restore the store from a backup; steplog never overwrites it.`,
    );
  const sealed = payloads.sealedBeyond(current);
  if (sealed) return sealed;
  for (const step of current.steps) {
    const broken = payloads.damage(step.value) ?? payloads.damage(step.error);
    if (broken !== undefined) return damaged(`the record of step ${JSON.stringify(step.key)} (attempt ${step.attempt})`, broken);
  }
  for (const event of current.events) {
    const broken = payloads.damage(event.payload);
    if (broken !== undefined) return damaged(`the payload of event ${JSON.stringify(event.name)}`, broken);
  }
  return undefined;
}

/**
 * A run deadline from `timeoutMs` (ms from now) or `deadline` (a time), at most one of them; else
 * `fallbackMs` from now. `where` names the call in the error (INVALID_OPTION).
 */
export function runDeadline(options: { timeoutMs?: number; deadline?: Date | number }, where: string, clock: Clock, fallbackMs?: number): number | undefined {
  const { timeoutMs, deadline } = options;
  if (timeoutMs !== undefined && deadline !== undefined) throw new InvalidOptionError(`${where}: give timeoutMs or deadline, not both.`);
  if (deadline !== undefined) {
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    if (!(typeof at === "number" && Number.isFinite(at)))
      throw new InvalidOptionError(`${where}: deadline must be a Date or a number of ms since the epoch, got ${String(deadline)}.`);
    return Math.ceil(at);
  }
  const ms = timeoutMs ?? fallbackMs;
  if (ms === undefined) return undefined;
  if (!(typeof ms === "number" && ms > 0)) throw new InvalidOptionError(`${where}: timeoutMs must be a number of milliseconds > 0, got ${String(ms)}.`);
  return Math.ceil(clock.now() + ms);
}
