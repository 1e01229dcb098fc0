/**
 * The UI's human queue: what waits for a person. Escalations (a step cut off inside an effect
 * that must not be repeated blindly: say whether it happened), approvals (a step with
 * `approval: true` the run is parked on), runs parked on their budget, and dead letters (runs
 * out of attempts), each with the buttons that do what `steplog resolve`, `approve`, `reject`,
 * `budget`, `run --continue --force` and `cancel` do.
 */

import { approvalCard, inputInspector } from "./approval-card.js";
import { budgetCard } from "./budget-card.js";
import { parkedOnBudget } from "./budget-parked.js";
import { actionForm, badge, flash, h, runHref, when, type Rendered, type UiContext } from "./layout.js";

export async function queuePage(ctx: UiContext, url: URL): Promise<Rendered> {
  const escalations = await ctx.engine.escalations({ redact: true });
  const approvals = await ctx.engine.approvals({ redact: true });
  const budgets = await parkedOnBudget(ctx);
  const dead = await ctx.engine.list({ status: "dead-lettered" });
  const section = (title: string, items: string[], empty: string) =>
    `<h2>${h(title)} <span class="muted small">${items.length}</span></h2>${items.length ? items.join("\n") : `<p class="empty">${h(empty)}</p>`}`;

  const escalationCards = escalations.map((e) => {
    const base = runHref(e.runId);
    return `<div class="card t-warn" data-run="${h(e.runId)}"><strong><a href="${base}">${h(e.runId)}</a></strong> · step ${h(e.step)} <span class="muted small">${h(e.effect)}, cut off ${h(when(e.cutOffAt))}</span>
<div class="muted small">${h(e.summary)}</div>${"input" in e ? inputInspector(e.input, `escalation:${e.runId}:${e.step}`) : ""}
<div class="actions">${actionForm(ctx, `${base}/resolve`, `<input type="hidden" name="step" value="${h(e.step)}"><input type="hidden" name="how" value="value"><label class="small">Its value (JSON)<br><textarea name="value" rows="2" cols="40"></textarea></label>`, "It happened: record this value")}
${actionForm(ctx, `${base}/resolve`, `<input type="hidden" name="step" value="${h(e.step)}"><input type="hidden" name="how" value="redo">`, "It did not happen: redo it", "quiet")}
${actionForm(ctx, `${base}/cancel`, "", "Cancel the run", "danger")}</div></div>`;
  });
  const approvalCards = approvals.map((a) =>
    approvalCard(
      ctx,
      a,
      `<strong><a href="${runHref(a.runId)}">${h(a.runId)}</a></strong> · ${h(a.workflow)} · step ${h(a.step)} <span class="muted small">waiting since ${h(when(a.since))}</span>`,
    ),
  );
  const budgetCards = budgets.map(({ run, waitingFor }) =>
    budgetCard(
      ctx,
      run.id,
      waitingFor,
      `<strong><a href="${runHref(run.id)}">${h(run.id)}</a></strong> · ${h(run.workflow)} <span class="muted small">waiting since ${h(when(run.updatedAt))}</span><br>`,
    ),
  );
  const deadCards = dead.map((r) => {
    const base = runHref(r.id);
    return `<div class="card t-bad" data-run="${h(r.id)}"><strong><a href="${base}">${h(r.id)}</a></strong> · ${h(r.workflow)} ${badge(r.status)} <span class="muted small">${r.attemptCount} attempts, last ${h(when(r.updatedAt))}</span>
<div class="actions">${actionForm(ctx, `${base}/continue`, `<input type="hidden" name="force" value="1">`, "Continue with a fresh budget")}
${actionForm(ctx, `${base}/cancel`, "", "Cancel", "danger")}</div></div>`;
  });
  const main = [
    flash(url),
    `<h1>Human queue</h1>`,
    section("Escalations", escalationCards, "No step waits for a person to say whether it happened."),
    section("Approvals", approvalCards, "No run waits for an approval."),
    section("Budgets", budgetCards, "No run waits for a raise of its budget."),
    section("Dead letters", deadCards, "No run is dead-lettered."),
  ].join("\n");
  return { status: 200, title: "Human queue", nav: "queue", main };
}
