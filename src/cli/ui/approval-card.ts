/**
 * An approval waiting for a person, as the UI shows it (the Human queue and the run's page): the
 * step, the input it would act on (one line, all of it on demand), that input's digest, a stale
 * marker with what the earlier approval approved, and the Approve button, which sends the digest
 * shown so a person approves what they saw (APPROVAL_STALE on the page if it changed meanwhile).
 */

import type { PendingApproval } from "../../operations/approvals.js";
import { oneLineJson, prettyJson, truncate } from "../format.js";
import { actionForm, h, runHref, when, type UiContext } from "./layout.js";

/** A recorded input: one line, the whole of it in an inspector. */
export function inputInspector(value: unknown, key: string): string {
  return `<details class="inspect" data-key="${h(key)}"><summary>input <code class="input">${h(oneLineJson(value, 80))}</code></summary><pre>${h(truncate(prettyJson(value), 20_000), true)}</pre></details>`;
}

export function approvalCard(ctx: UiContext, a: PendingApproval, heading: string): string {
  const base = runHref(a.runId);
  const input =
    "input" in a
      ? inputInspector(a.input, `approval:${a.runId}:${a.step}`)
      : a.inputSealed !== undefined
        ? `<div class="muted small">input sealed with key ${h(a.inputSealed)} (this engine lacks it)</div>`
        : "";
  const digest = a.inputDigest === undefined ? "" : `<div class="muted small">digest <code class="digest">${h(a.inputDigest)}</code></div>`;
  const stale = a.stale
    ? `<div class="small stale"><strong class="stale-mark">stale</strong> approved before${a.stale.by ? ` by ${h(a.stale.by)}` : ""}${a.stale.at ? ` ${h(when(a.stale.at))}` : ""} for another input: <code>${h(a.stale.previews.approved)}</code>; now <code>${h(a.stale.previews.now)}</code></div>`
    : "";
  const fields = `<input type="hidden" name="step" value="${h(a.step)}">`;
  const approveFields = a.inputDigest === undefined ? fields : `${fields}<input type="hidden" name="inputDigest" value="${h(a.inputDigest)}">`;
  return `<div class="card t-wait approval" data-run="${h(a.runId)}" data-step="${h(a.step)}">${heading}${stale}${input}${digest}
<div class="actions">${actionForm(ctx, `${base}/approve`, approveFields, "Approve")}
${actionForm(ctx, `${base}/reject`, `${fields}<input name="reason" placeholder="why" size="24">`, "Reject", "danger")}</div></div>`;
}
