/**
 * The gate before an `approval: true` step: it goes on if the step was approved, else the run
 * parks until it is. A step given an `input` is approved for that input only: the approval
 * records the digest of the input it approved (operations/approvals.ts), and a call that reaches
 * the step with another input parks it for a new approval, its wait marked stale with the earlier
 * approval (kept in the run's events). The wait carries the input as stored (sealed by the codec)
 * so every queue view can show what is to be approved.
 */

import type { AttemptState } from "./state.js";
import type { StepCall } from "./step-call.js";
import { approvalEvent, park } from "./waits.js";
import type { StoredWait } from "../workflow/step-resolution.js";

/** An approval's event payload: the answer, and for a step given an input the input it approved (as stored) and its digest. */
export interface ApprovalRecord {
  approved: boolean;
  by?: string;
  reason?: string;
  at?: string;
  inputDigest?: string;
  input?: string;
}

/** Before an `approval: true` step runs: go on if it was approved (for the call's input, when it has one), else park until it is. */
export async function checkApproval(state: AttemptState, call: StepCall): Promise<void> {
  const key = call.key;
  const last = state.stored.events.filter((e) => e.name === approvalEvent(key)).at(-1);
  const answer = last === undefined ? undefined : ((await state.payloads.decode(last.payload)) as ApprovalRecord);
  const given = call.input;
  const wait: StoredWait = { kind: "approval", step: key };
  if (given === undefined || given.digest === undefined) {
    // No input (or a codec that makes no digest): approved for the step, as before.
    if (answer?.approved === true) return;
    return park(state, wait);
  }
  // A digest made under an earlier key compares under that key (as a record's does); a re-driven cut-off row's is its record's.
  const digest = answer?.inputDigest !== undefined && given.plain !== "" ? state.payloads.digest(given.plain, answer.inputDigest) : given.digest;
  if (answer?.approved === true && answer.inputDigest === digest) return;
  wait.input = given.stored ?? (await state.payloads.seal(given.plain));
  wait.inputDigest = given.digest;
  if (answer?.approved === true) {
    // Approved for another input: that approval is kept, and this wait says what it approved.
    wait.stale = { at: answer.at ?? "", ...(answer.by === undefined ? {} : { by: answer.by }) };
    if (answer.inputDigest !== undefined) wait.stale.inputDigest = answer.inputDigest;
    if (answer.input !== undefined) wait.stale.input = answer.input;
  }
  return park(state, wait);
}
