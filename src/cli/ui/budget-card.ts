/**
 * A run parked on its budget, as the UI shows it (the Human queue and the run's page): what it
 * spent against what it may, and a form for new limits (what `steplog budget` does). A child run
 * drawing on another run's budget raises that run's, which wakes it too.
 */

import type { WaitingFor } from "../../workflow/step-resolution.js";
import { budgetText, budgetWaitText } from "../format.js";
import { actionForm, h, runHref, type UiContext } from "./layout.js";

export function budgetCard(ctx: UiContext, runId: string, w: WaitingFor, heading = ""): string {
  const owner = w.budgetRun ?? runId;
  const field = (name: "usd" | "tokens", label: string) =>
    `<label class="small">${label}<br><input name="${name}" inputmode="decimal" size="10" placeholder="${h(String(w.budget?.[name] ?? ""))}"></label>`;
  return `<div class="card t-wait" data-run="${h(runId)}">${heading}<strong>${h(budgetWaitText(w))}.</strong> <span class="muted small">${h(budgetText({ spent: w.spent ?? { usd: 0, tokens: 0 }, budget: w.budget ?? {} }) ?? "")}</span>
<div class="actions">${actionForm(ctx, `${runHref(owner)}/budget`, `${field("usd", "New limit, USD")} ${field("tokens", "New limit, tokens")}`, owner === runId ? "Raise the budget" : `Raise the budget of ${h(owner)}`)}</div></div>`;
}
