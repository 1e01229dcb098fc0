/**
 * The UI's buttons: each POST does what the matching steplog command does (`resolve`,
 * `approve`, `reject`, `cancel`, `run --continue [--force]`, `budget`), through the same engine calls,
 * and answers with where to go next and what to say there. A refusal (a SteplogError) is said
 * on the page; anything else is the server's to report.
 */

import { isSteplogError } from "../../base/errors.js";
import { CliError } from "../exit.js";
import { runHref, type UiContext } from "./layout.js";

export const ACTIONS = ["resolve", "approve", "reject", "cancel", "continue", "budget"] as const;
export type Action = (typeof ACTIONS)[number];

/** Who the records name for an answer given in the UI. */
const BY = "steplog ui";

export interface ActionOutcome {
  /** Where to send the browser (303), with ?done= or ?error=. */
  location: string;
}

export async function runAction(ctx: UiContext, action: Action, runId: string, form: URLSearchParams, back: string): Promise<ActionOutcome> {
  const to = (target: string, key: "done" | "error", text: string) => {
    const url = new URL(target, "http://ui");
    url.searchParams.set(key, text);
    return { location: `${url.pathname}${url.search}` };
  };
  const page = back.startsWith("/") && !back.startsWith("//") ? back : runHref(runId);
  try {
    const step = form.get("step") ?? "";
    switch (action) {
      case "approve": {
        // The digest of the input the page showed: a person approves what they saw (APPROVAL_STALE if it changed since).
        const inputDigest = form.get("inputDigest") ?? "";
        await ctx.engine.approve(runId, step, { by: BY, ...(inputDigest ? { inputDigest } : {}) });
        return to(page, "done", `Step ${step} of run ${runId} approved. A worker (steplog work) goes on with it, or press Continue.`);
      }
      case "reject": {
        const reason = form.get("reason")?.trim();
        await ctx.engine.reject(runId, step, { by: BY, ...(reason ? { reason } : {}) });
        return to(page, "done", `Step ${step} of run ${runId} rejected: the run is stopped.`);
      }
      case "resolve": {
        if (form.get("how") === "redo") {
          await ctx.engine.resolve(runId, step, { redo: true, by: BY });
          return to(page, "done", `Step ${step} of run ${runId} will be redone (same idempotency key) by the next continue.`);
        }
        const text = form.get("value") ?? "";
        let value: unknown;
        try {
          value = text.trim() === "" ? undefined : JSON.parse(text);
        } catch (error) {
          return to(page, "error", `The value is not JSON (${(error as Error).message}). Nothing was recorded.`);
        }
        await ctx.engine.resolve(runId, step, { value, by: BY });
        return to(page, "done", `Step ${step} of run ${runId} recorded as done; the next continue hands its value back.`);
      }
      case "cancel": {
        const reason = form.get("reason")?.trim();
        const status = await ctx.engine.cancel(runId, { reason: reason || "cancelled from steplog ui" });
        return to(page, "done", `Run ${runId} is ${status}.`);
      }
      case "budget": {
        // Empty fields are left out (that limit stays); anything else goes to the engine, which checks it.
        const limit = (name: string) => {
          const text = form.get(name)?.trim() ?? "";
          return text === "" ? {} : { [name]: Number(text) };
        };
        const budget = await ctx.engine.raiseBudget(runId, { ...limit("usd"), ...limit("tokens") });
        const now = [budget.usd === undefined ? "" : `$${budget.usd}`, budget.tokens === undefined ? "" : `${budget.tokens} tokens`].filter(Boolean).join(", ");
        return to(page, "done", `Budget of run ${runId} raised to ${now}. A worker (steplog work) goes on with it, or press Continue.`);
      }
      case "continue":
        await ctx.continueRun(runId, { force: form.get("force") === "1" });
        return to(runHref(runId), "done", `Run ${runId} is being continued here; this page follows it.`);
    }
  } catch (error) {
    // A refusal (RUN_BUSY, NOT_ESCALATED, a workflow file that will not load, …) is said on the page.
    if (!isSteplogError(error) && !(error instanceof CliError)) throw error;
    if (error instanceof CliError) return to(page, "error", error.hint ? `${error.message} ${error.hint}` : error.message);
    return to(page, "error", `${error.code}: ${error.message}`);
  }
}
