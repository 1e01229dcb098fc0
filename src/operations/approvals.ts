/**
 * Approvals: answering an `approval: true` step the run is parked on (approve, reject), and the
 * queue of pending approvals across runs. An approval of a step given an input records the
 * digest of the input it approved (and that input, as stored), so the step runs for that input
 * only (steps/approval-gate.ts); an approve that names a digest is refused if the input waiting
 * now is another (APPROVAL_STALE).
 */

import { ApprovalStaleError, NotWaitingError, RunNotFoundError, StoppedError } from "../base/errors.js";
import type { RunRow, Store } from "../store/types.js";
import type { Payloads } from "../payloads/payloads.js";
import { encodeValue } from "../payloads/values.js";
import { redact, type RedactRule } from "../payloads/redact.js";
import { approvalEvent } from "../steps/waits.js";
import type { ApprovalRecord } from "../steps/approval-gate.js";
import { parseWaitingFor, type StoredWait } from "../workflow/step-resolution.js";
import { describeState, event, waitingFor } from "./events.js";

export interface ApprovalAnswer {
  approved: boolean;
  by?: string;
  reason?: string;
  /** Approve only this input (its digest, as the queue showed it). */
  inputDigest?: string;
}

/** A step the run is parked on, waiting for a person's approval (engine.approvals()). */
export interface PendingApproval {
  runId: string;
  workflow: string;
  /** The step's key (what engine.approve takes). */
  step: string;
  /** What the step acts on (its `input`), decoded (and redacted with `redact: true`); absent for a step given none, or sealed with a key this engine lacks. */
  input?: unknown;
  /** The digest of that input: pass it to engine.approve(id, step, { inputDigest }) to approve only what was shown. */
  inputDigest?: string;
  /** The id of the key the input is sealed with, when this engine cannot open it (then `input` is absent). */
  inputSealed?: string;
  /** When the run parked on it (ISO time). */
  since: string;
  /** The step was approved before for another input: that approval, kept but no longer in force, and what changed. */
  stale?: {
    by?: string;
    /** When it was given (ISO time). */
    at: string;
    inputDigest?: string;
    /** The input it approved (decoded, and redacted with `redact: true`), when it had one and this engine can open it. */
    input?: unknown;
    /** The input it approved and the input waiting now, each on one line (cut to 200 characters). */
    previews: { approved: string; now: string };
  };
}

export interface ApprovalsFilter {
  workflow?: string;
  runId?: string;
  /** Pass the inputs through the engine's `redact` rules (as engine.get(id, { redact: true })). */
  redact?: boolean;
}

const PREVIEW_CHARS = 200;

async function loadRow(store: Store, runId: string): Promise<RunRow | undefined> {
  return store.loadRunRow ? store.loadRunRow(runId) : (await store.loadRun(runId))?.run;
}

/** The approval of `step` a run row waits for, if it does. */
function pendingOf(row: RunRow, step?: string): StoredWait | undefined {
  const wait = row.status === "waiting" ? parseWaitingFor(row.waitingFor) : undefined;
  return wait?.kind === "approval" && (step === undefined || wait.step === step) ? wait : undefined;
}

export async function answerApproval(store: Store, runId: string, step: string, answer: ApprovalAnswer, now: number, payloads: Payloads): Promise<void> {
  const before = await loadRow(store, runId);
  if (before === undefined) throw new RunNotFoundError(runId, store.location);
  const pending = pendingOf(before, step);
  const { inputDigest: given, ...said } = answer;
  if (pending && given !== undefined && pending.inputDigest !== given) throw new ApprovalStaleError(runId, step, given, pending.inputDigest);
  // The approval is of the input waiting now: its digest (and the input as stored, for a later stale approval's preview).
  const record: ApprovalRecord = { ...said, at: new Date(now).toISOString() };
  if (pending?.inputDigest !== undefined) record.inputDigest = pending.inputDigest;
  if (pending?.input !== undefined) record.input = pending.input;
  const payload = (await payloads.encode(record, "The approval", { runId })).stored;
  const reason = `approval of step ${JSON.stringify(step)} was rejected${answer.by ? ` by ${answer.by}` : ""}${answer.reason ? `: ${answer.reason}` : ""}`;
  const stopped = new StoppedError(runId, step, reason, `To ask again, type engine.continue(${JSON.stringify(runId)}).`);
  const error = await payloads.encodeError({ name: stopped.name, message: stopped.message, code: stopped.code, step });
  const done = await store.updateRun(runId, (current) => {
    const sealed = payloads.sealedBeyond(current);
    if (sealed) return { error: sealed, result: false };
    const waiting = waitingFor(current);
    if (waiting?.kind !== "approval" || waiting.step !== step) {
      return { error: new NotWaitingError(runId, `approval of step ${JSON.stringify(step)}`, describeState(current), "approval"), result: false };
    }
    // The input changed between the look above and now (a continue parked the step again): the approval is not of it.
    if (answer.approved && waiting.inputDigest !== pending?.inputDigest) {
      return { error: new ApprovalStaleError(runId, step, given ?? pending?.inputDigest ?? "(none)", waiting.inputDigest), result: false };
    }
    const row = event(current, approvalEvent(step), payload, now);
    // Answered once: a second approve or a reject after it is refused.
    if (answer.approved) return { appendEvents: [row], run: { wakeAt: now, waitingFor: null, updatedAt: now }, result: true };
    return { appendEvents: [row], run: { status: "stopped" as const, error, waitingFor: null, wakeAt: null, updatedAt: now }, result: true };
  });
  if (done === undefined) throw new RunNotFoundError(runId, store.location);
}

/** The pending approvals of the store's parked runs (newest run first), each with the input to be approved. */
export async function listApprovals(store: Store, payloads: Payloads, filter: ApprovalsFilter, rule: RedactRule | undefined): Promise<PendingApproval[]> {
  const listings = await store.listRuns({
    status: ["waiting"],
    waitingKind: "approval",
    ...(filter.workflow === undefined ? {} : { workflow: filter.workflow }),
  });
  const shown = (value: unknown) => (filter.redact ? redact(value, rule) : value);
  const out: PendingApproval[] = [];
  for (const { run } of listings) {
    const wait = pendingOf(run);
    if (wait === undefined || (filter.runId !== undefined && run.id !== filter.runId)) continue;
    const item: PendingApproval = { runId: run.id, workflow: run.workflow, step: wait.step, since: new Date(run.updatedAt).toISOString() };
    const now = await open(payloads, wait.input);
    if (now.value !== NONE) item.input = shown(now.value);
    if (wait.inputDigest !== undefined) item.inputDigest = wait.inputDigest;
    if (now.sealed !== undefined) item.inputSealed = now.sealed;
    if (wait.stale) {
      const { input: stored, ...earlier } = wait.stale;
      const approved = await open(payloads, stored);
      item.stale = { ...earlier, previews: { approved: preview(approved, shown), now: preview(now, shown) } };
      if (approved.value !== NONE) item.stale.input = shown(approved.value);
    }
    out.push(item);
  }
  return out;
}

const NONE = Symbol("none");

/** A stored input opened: its value, or NONE with the key id it is sealed with when this engine lacks that key. */
async function open(payloads: Payloads, stored: string | undefined): Promise<{ value: unknown; sealed?: string }> {
  if (stored === undefined) return { value: NONE };
  const missing = payloads.missingKey(stored);
  if (missing !== undefined) return { value: NONE, sealed: missing };
  return { value: await payloads.decode(stored) };
}

function preview(opened: { value: unknown; sealed?: string }, shown: (value: unknown) => unknown): string {
  if (opened.sealed !== undefined) return `(sealed with key ${opened.sealed})`;
  if (opened.value === NONE) return "(none)";
  const text = encodeValue(shown(opened.value), "input", { maxBytes: Number.MAX_SAFE_INTEGER });
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}
