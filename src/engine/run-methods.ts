/**
 * The Engine's methods on one run by its id, outside an attempt: send an event, approve or
 * reject a step, cancel, resolve an escalated step, get the run's view. Each checks its options
 * here and does the work through operations/ (what it writes) and the engine's running attempts
 * (a run that runs in this process is reached there).
 */

import { InvalidOptionError, RunBusyError, RunCancelledError, RunNotFoundError } from "../base/errors.js";
import { checkKnownKeys } from "../base/options.js";
import { cancelStoredRun } from "../operations/cancel.js";
import { resolveEscalation, type Resolution } from "../operations/escalations.js";
import { sendEvent, type Delivery, type SendOptions } from "../operations/events.js";
import { answerApproval } from "../operations/approvals.js";
import { holderGone, redactView, summarize, viewRun, type RunView } from "../operations/views.js";
import { ENDED_STATUSES, type RunStatus } from "../store/types.js";
import { checkName } from "../workflow/names.js";
import { checkBudget, type Budget } from "../workflow/budgets.js";
import { raiseBudget as raiseStoredBudget } from "../operations/budget.js";
import { BUDGET_KEYS, APPROVE_KEYS, type ApproveOptions, CANCEL_KEYS, GET_KEYS, REJECT_KEYS, RESOLUTION_KEYS, SEND_KEYS, type CancelOptions } from "./api.js";
import type { EngineCore } from "./engine-core.js";

export async function raiseBudget(core: EngineCore, id: string, limits: Budget): Promise<Budget> {
  core.open();
  checkName("run id", id);
  const where = `raiseBudget(${JSON.stringify(id)})`;
  checkKnownKeys(where, limits ?? {}, BUDGET_KEYS, { runId: id });
  const budget = await raiseStoredBudget(core.store, id, checkBudget(where, limits, id), core.settings.clock.now());
  core.wake();
  return budget;
}

export async function send(core: EngineCore, id: string, event: string, payload: unknown, options: SendOptions): Promise<Delivery> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`send(${JSON.stringify(id)}, ${JSON.stringify(event)})`, options, SEND_KEYS, { runId: id });
  if (options.key !== undefined) checkName("event key", options.key);
  const sent = await sendEvent(core.store, id, event, payload, options, core.settings.clock.now(), core.settings.payloads);
  if (!sent.duplicate) core.wake();
  return sent;
}

export async function approve(core: EngineCore, id: string, step: string, options: ApproveOptions): Promise<void> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`approve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, APPROVE_KEYS, { runId: id });
  if (options.inputDigest !== undefined && (typeof options.inputDigest !== "string" || options.inputDigest === ""))
    throw new InvalidOptionError(
      `approve(${JSON.stringify(id)}, ${JSON.stringify(step)}): inputDigest must be the digest engine.approvals() shows for the step, a non-empty string.`,
      { runId: id, step },
    );
  await answerApproval(
    core.store,
    id,
    step,
    {
      approved: true,
      ...(options.by === undefined ? {} : { by: options.by }),
      ...(options.inputDigest === undefined ? {} : { inputDigest: options.inputDigest }),
    },
    core.settings.clock.now(),
    core.settings.payloads,
  );
  core.wake();
}

export async function reject(core: EngineCore, id: string, step: string, options: { by?: string; reason?: string }): Promise<void> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`reject(${JSON.stringify(id)}, ${JSON.stringify(step)})`, options, REJECT_KEYS, { runId: id });
  await answerApproval(core.store, id, step, { approved: false, ...options }, core.settings.clock.now(), core.settings.payloads);
}

export async function cancel(core: EngineCore, id: string, options: CancelOptions): Promise<RunStatus> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`cancel(${JSON.stringify(id)})`, options, CANCEL_KEYS, { runId: id });
  if (options.children !== undefined && typeof options.children !== "boolean") {
    throw new InvalidOptionError(`cancel(${JSON.stringify(id)}): children must be true or false, got ${String(options.children)}.`, { runId: id });
  }
  const reason = options.reason ?? "cancelled by request";
  const local = core.running.of(id);
  let status: RunStatus;
  if (local) {
    local.attempt.endWith("cancelled", new RunCancelledError(id, local.attempt.lastEntered, reason));
    status = (await local.done).runStatus;
  } else {
    status = await cancelStoredRun(core.store, id, reason, core.settings.clock.now(), core.settings.payloads);
    // A parked run's attempt records no ending to wake its parent: the cancel does.
    const parent = (await core.store.loadRunRow(id))?.parent;
    if (parent) await core.children.ended(parent, id).catch(() => {});
  }
  if (options.children) {
    // The parent first, so it starts no more; then each child that has not ended, and theirs.
    for (const child of await core.store.listRuns({ parent: id })) {
      if (ENDED_STATUSES.includes(child.run.status)) continue;
      await cancel(core, child.run.id, { reason: `its parent run ${JSON.stringify(id)} was cancelled: ${reason}`, children: true });
    }
  }
  return status;
}

export async function resolve(core: EngineCore, id: string, step: string, answer: Resolution): Promise<void> {
  core.open();
  checkName("run id", id);
  const valid = typeof answer === "object" && answer !== null && ("value" in answer || (answer as { redo?: unknown }).redo === true);
  if (valid) checkKnownKeys(`resolve(${JSON.stringify(id)}, ${JSON.stringify(step)})`, answer, RESOLUTION_KEYS, { runId: id, step });
  if (!valid)
    throw new InvalidOptionError(
      `resolve(${JSON.stringify(id)}, ${JSON.stringify(step)}): pass { value } if the effect happened or { redo: true } if it did not.`,
      { runId: id, step },
    );
  const judge = core.judge(await core.where());
  await resolveEscalation(core.store, id, step, answer, judge.now, core.settings.payloads, (current) => {
    const { lease } = current;
    const holder = lease?.attempt == null ? undefined : current.attempts.find((a) => a.number === lease.attempt);
    if (!lease || !holder || holderGone(lease, holder, judge)) return undefined;
    return new RunBusyError(id, { attempt: holder.number, host: holder.host, pid: holder.pid, expiresAt: lease.expiresAt });
  });
}

export async function get(core: EngineCore, id: string, options: { redact?: boolean }): Promise<RunView> {
  core.open();
  checkName("run id", id);
  checkKnownKeys(`get(${JSON.stringify(id)})`, options, GET_KEYS, { runId: id });
  const stored = await core.store.loadRun(id);
  if (!stored) throw new RunNotFoundError(id, core.store.location);
  const judge = core.judge(await core.where());
  const children = (await core.store.listRuns({ parent: id })).map((listing) => summarize(listing, judge)).reverse();
  const view = await viewRun(stored, judge, core.settings.payloads, children);
  return options.redact ? redactView(view, core.redact) : view;
}
