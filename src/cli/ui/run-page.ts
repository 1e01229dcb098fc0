/**
 * The UI's page for one run: its facts, parent and children, what it waits for, the buttons that
 * move it on, its streams (streams-section.ts), and every attempt on one shared time axis (the
 * run's first start to its last end), each step with its status, effect, idempotency key, duration, calls and each call's
 * error, cost, and its value in an inspector. Reused, re-driven, resolved-by-a-person and
 * handled-failure rows each have a look of their own (a fixed class per kind).
 */

import { isSteplogError } from "../../base/errors.js";
import type { Escalation } from "../../operations/escalations.js";
import type { PendingApproval } from "../../operations/approvals.js";
import { approvalCard, inputInspector } from "./approval-card.js";
import { describeEntry, errorText } from "../describe.js";
import { budgetText, budgetWaitText, formatDuration, formatUsage, oneLineJson, prettyJson, truncate } from "../format.js";
import { buildTimeline, type Timeline, type TimelineAttempt, type TimelineEntry } from "../timeline.js";
import { nestedKeys } from "../nesting.js";
import { budgetCard } from "./budget-card.js";
import { streamsSection } from "./streams-section.js";
import { actionForm, badge, flash, h, runHref, when, type Rendered, type UiContext } from "./layout.js";

/** The look of a row: which kind of thing happened to the step. */
type Look = "ran" | "failed" | "reused" | "redriven" | "person" | "escalated" | "handled" | "wait" | "comp";

const LOOK_LABELS: Record<Look, string> = {
  ran: "ran",
  failed: "failed",
  reused: "reused (record handed back, not run)",
  redriven: "re-driven or settled by its policy after a crash",
  person: "resolved by a person",
  escalated: "waits for a person",
  handled: "failed, handled by the workflow",
  wait: "a wait",
  comp: "compensation",
};

function lookOf(e: TimelineEntry): Look {
  if (e.kind === "reused") return "reused";
  if (e.kind === "resolved") return "person";
  if (e.kind === "compensation") return "comp";
  if (e.wait) return "wait";
  if (e.handled) return "handled";
  if (e.status === "escalated") return "escalated";
  const policy = e.resolution?.policy;
  if (policy === "escalate") return "person";
  if (policy === "redrive" || policy === "compensate" || policy === "query") return "redriven";
  if (e.status === "failed" || e.status === "stopped" || e.status === "escalated" || e.status === "intended") return e.status === "intended" ? "ran" : "failed";
  return "ran";
}

export async function runPage(ctx: UiContext, url: URL, id: string): Promise<Rendered> {
  let view;
  try {
    view = await ctx.engine.get(id, { redact: true });
  } catch (error) {
    if (!isSteplogError(error, "RUN_NOT_FOUND")) throw error;
    return {
      status: 404,
      title: "No such run",
      nav: "runs",
      main: `<h1>No run ${h(id)}</h1><p class="muted">This store has no run with that id. <a href="/">All runs</a></p>`,
    };
  }
  const escalations = view.status === "escalated" ? (await ctx.engine.escalations({ redact: true })).filter((e) => e.runId === id) : [];
  const approvals = view.waitingFor?.kind === "approval" ? await ctx.engine.approvals({ runId: id, redact: true }) : [];
  const t = buildTimeline(view, escalations, ctx.now());
  // Export: the run's records as one document, to take to another store or a unit test (testWorkflow's `from`).
  const download = `<a class="small" href="${runHref(t.id)}/export.json" download>Export${ctx.redacting ? " (redacted)" : ""}</a>`;
  const parts = [flash(url), `<h1>Run ${h(t.id)} ${badge(t.status)} ${download}</h1>`, facts(t), actions(ctx, t, escalations, approvals)];
  if (t.error) parts.push(`<div class="card t-bad"><strong>Error</strong><pre>${h(errorText(t.error), true)}</pre></div>`);
  if ("value" in t)
    parts.push(
      `<details class="inspect" data-key="run-value" open><summary>Value</summary><pre>${h(truncate(prettyJson(t.value), 20_000), true)}</pre></details>`,
    );
  parts.push(await streamsSection(ctx, id));
  parts.push(timeline(t));
  return { status: 200, title: `Run ${t.id}`, nav: "runs", main: parts.join("\n") };
}

function facts(t: Timeline): string {
  const rows: Array<[string, string]> = [
    ["workflow", `${h(t.workflow)}${t.version ? ` <span class="muted">${h(t.version)}</span>` : ""}`],
    ["source", t.source ? `<code>${h(t.source)}</code>` : `<span class="muted">none recorded</span>`],
    ["started", h(when(t.createdAt))],
    ["updated", h(when(t.updatedAt))],
    ["attempts", String(t.attemptCount)],
    ["cost", h(formatUsage(t.totals.usage) || "no usage recorded")],
  ];
  if (t.parent !== null) rows.push(["parent", `<a href="${runHref(t.parent)}">${h(t.parent)}</a>`]);
  if (t.children.length) rows.push(["children", t.children.map((c) => `<a href="${runHref(c.id)}">${h(c.id)}</a> ${badge(c.status)}`).join(" ")]);
  if (t.waitingFor) {
    const w = t.waitingFor;
    const what =
      w.kind === "event"
        ? `event ${h(JSON.stringify(w.event))}`
        : w.kind === "sleep"
          ? `its timer`
          : w.kind === "child"
            ? `child run <a href="${runHref(w.child ?? "")}">${h(w.child ?? "?")}</a>`
            : w.kind === "turn"
              ? "its turn (a concurrency or rate limit)"
              : w.kind === "budget"
                ? h(budgetWaitText(w))
                : `approval of step ${h(w.step)}`;
    rows.push(["waiting for", `${what}${w.until !== undefined ? ` until ${h(when(new Date(w.until).toISOString()))}` : ""}`]);
  }
  const budget = budgetText(t);
  if (budget) rows.push(["budget", h(budget)]);
  const dl = `<dl class="facts">${rows.map(([k, v]) => `<dt>${h(k)}</dt><dd>${v}</dd>`).join("")}</dl>`;
  return `${dl}<details class="inspect" data-key="args"><summary>Args</summary><pre>${h(truncate(prettyJson(t.args), 20_000), true)}</pre></details>`;
}

/** The buttons that do what the matching steplog commands do (none in read-only mode). */
function actions(ctx: UiContext, t: Timeline, escalations: Escalation[], approvals: PendingApproval[]): string {
  if (ctx.readOnly) return "";
  const base = runHref(t.id);
  const cards: string[] = [];
  for (const e of escalations) {
    cards.push(`<div class="card t-warn"><strong>Step ${h(e.step)} waits for a person.</strong> <span class="muted">${h(e.summary)}</span>${"input" in e ? inputInspector(e.input, `escalation:${e.step}`) : ""}
<div class="actions">${actionForm(ctx, `${base}/resolve`, `<input type="hidden" name="step" value="${h(e.step)}"><label class="small">Its value (JSON)<br><textarea name="value" rows="2" cols="40" placeholder='{"id":"ch_1"}'></textarea></label><input type="hidden" name="how" value="value">`, "It happened: record this value")}
${actionForm(ctx, `${base}/resolve`, `<input type="hidden" name="step" value="${h(e.step)}"><input type="hidden" name="how" value="redo">`, "It did not happen: redo it", "quiet")}</div></div>`);
  }
  for (const a of approvals) cards.push(approvalCard(ctx, a, `<strong>Step ${h(a.step)} waits for approval.</strong>`));
  // A child that draws on another run's budget: the form raises that run's (and so wakes this one).
  if (t.waitingFor?.kind === "budget") cards.push(budgetCard(ctx, t.id, t.waitingFor));
  const buttons: string[] = [];
  const due = t.status === "waiting" && t.wakeAt !== undefined && Date.parse(t.wakeAt) <= ctx.now();
  if (["failed", "stopped", "timed-out", "cancelled", "interrupted", "ready"].includes(t.status) || due) {
    buttons.push(actionForm(ctx, `${base}/continue`, "", "Continue"));
  }
  if (t.status === "dead-lettered")
    buttons.push(actionForm(ctx, `${base}/continue`, `<input type="hidden" name="force" value="1">`, "Continue with a fresh budget"));
  if (!["completed", "cancelled", "compensated"].includes(t.status)) {
    buttons.push(actionForm(ctx, `${base}/cancel`, `<input name="reason" placeholder="reason (optional)" size="20">`, "Cancel", "danger"));
  }
  return cards.join("\n") + (buttons.length ? `<div class="actions">${buttons.join("")}</div>` : "");
}

/** Every attempt on one axis: from the run's first attempt's start to its last attempt's end. */
function timeline(t: Timeline): string {
  if (t.attempts.length === 0) return `<p class="empty">No attempt yet${t.waitingFor?.kind === "turn" ? ": the run waits for its turn" : ""}.</p>`;
  const start = Math.min(...t.attempts.map((a) => a.startedAt));
  const end = Math.max(start + 1, ...t.attempts.map((a) => a.startedAt + (a.durationMs ?? 0)));
  const span = end - start;
  const legend = `<div class="legend">${(Object.keys(LOOK_LABELS) as Look[])
    .map((look) => `<span class="k-${look}"><span class="sw bar k-${look}"></span>${h(LOOK_LABELS[look])}</span>`)
    .join("")}</div>`;
  const axis = `<div class="axis"><span></span><span class="ticks"><span>0</span><span>${h(formatDuration(span / 2))}</span><span>${h(formatDuration(span))}</span></span><span></span></div>`;
  return `<h2>Attempts <span class="muted small">on one time axis, ${h(formatDuration(span))} from the first start</span></h2>${legend}${axis}${t.attempts.map((a) => attempt(a, start, span)).join("\n")}`;
}

function attempt(a: TimelineAttempt, start: number, span: number): string {
  const meta = [
    a.durationMs === null ? "" : formatDuration(a.durationMs),
    `pid ${a.pid} on ${a.host}`,
    a.fromStep ? `from step ${a.fromStep}` : "",
    a.forced ? "forced" : "",
  ]
    .filter(Boolean)
    .join(" · ");
  const head = `<h3>Attempt ${a.number} ${badge(a.ending ?? "running")} <span class="muted small">${h(meta)}</span></h3>`;
  const err = a.error ? `<div class="step"><span class="call">${h(truncate(errorText(a.error), 600))}</span></div>` : "";
  // A session's tool calls under the session (durableClaudeQuery): indented, by their own name.
  const nested = nestedKeys(a.entries.map((e) => e.key));
  const rows = a.entries.map((e) => step(e, a, start, span, nested.get(e.key)?.rest)).join("");
  return `<section class="attempt" data-attempt="${a.number}">${head}${err}${rows || `<p class="muted small">no steps</p>`}</section>`;
}

const pct = (n: number) => `${(Number.isFinite(n) ? Math.min(100, Math.max(0, n)) : 0).toFixed(2)}%`;

function step(e: TimelineEntry, a: TimelineAttempt, start: number, span: number, inner?: string): string {
  const look = lookOf(e);
  const words = describeEntry(e, a);
  let bar: string;
  if (e.kind === "reused" || e.kind === "resolved") {
    // Handed back when the attempt began: a marker there, not its original time.
    bar = `<span class="bar k-${look}" style="left:${pct(((a.startedAt - start) / span) * 100)}"></span>`;
  } else {
    const left = ((e.startedAt - start) / span) * 100;
    const duration = e.durationMs ?? Math.max(0, a.startedAt + (a.durationMs ?? 0) - e.startedAt);
    const width = Math.max(0.5, (duration / span) * 100);
    bar = `<span class="bar k-${look}${e.endedAt === null ? " open" : ""}" style="left:${pct(left)};width:${pct(Math.min(width, 100 - Math.min(99.5, Math.max(0, left))))}"></span>`;
  }
  const detail = [e.effect, `key ${e.idempotencyKey}`, e.calls > 1 ? `${e.calls} calls` : ""].filter(Boolean).join(" · ");
  const calls =
    e.callErrors && (e.callErrors.length > 1 || e.calls > 1)
      ? e.callErrors.map((c) => `<span class="call">call ${c.call} ✗ ${h(truncate(errorText(c.error), 300))}</span>`).join("")
      : "";
  const input = "input" in e ? inputInspector(e.input, `a${a.number}:${e.kind}:${e.key}:${e.seq}:input`) : "";
  const inspector =
    "value" in e
      ? `<details class="inspect" data-key="${h(`a${a.number}:${e.kind}:${e.key}:${e.seq}`)}"><summary>value <code>${h(oneLineJson(e.value, 60))}</code></summary><pre>${h(truncate(prettyJson(e.value), 20_000), true)}</pre></details>`
      : "";
  const time =
    e.kind === "reused" ? `saved ${formatDuration(e.durationMs ?? 0)}` : e.kind === "resolved" || e.durationMs === null ? "" : formatDuration(e.durationMs);
  const info = [time, formatUsage(e.usage)].filter(Boolean).join(" · ");
  const indent = inner === undefined ? "" : ` style="padding-left:1.5em"`;
  return `<div class="step k-${look}${inner === undefined ? "" : " nested"}" data-step="${h(e.key)}" data-look="${look}"><div class="name"${indent}><span class="glyph">${h(words.glyph)}</span> ${h(inner ?? e.key)}<span class="label">${h(words.label)}</span><span class="detail">${h(detail)}</span>${words.note ? `<span class="detail">${h(truncate(words.note, 300))}</span>` : ""}${calls}${input}${inspector}</div><div class="track">${bar}</div><div class="info">${h(info)}</div></div>`;
}
