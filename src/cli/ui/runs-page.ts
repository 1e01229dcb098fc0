/** The UI's runs list: every run of the store, newest first, filtered by status, workflow and text in the id. */

import type { RunStatus } from "../../store/types.js";
import { badge, flash, h, runHref, when, type Rendered, type UiContext } from "./layout.js";

const STATUSES: readonly RunStatus[] = [
  "running",
  "interrupted",
  "waiting",
  "escalated",
  "ready",
  "completed",
  "failed",
  "stopped",
  "timed-out",
  "cancelled",
  "dead-lettered",
  "compensated",
];

/** At most this many rows; the filters narrow it down. */
const SHOWN = 500;

export async function runsPage(ctx: UiContext, url: URL): Promise<Rendered> {
  const status = url.searchParams.get("status") ?? "";
  const workflow = url.searchParams.get("workflow") ?? "";
  const text = (url.searchParams.get("q") ?? "").trim();
  const all = await ctx.engine.list({});
  const workflows = [...new Set(all.map((r) => r.workflow))].sort();
  const runs = all
    .filter((r) => (status === "" || r.status === status) && (workflow === "" || r.workflow === workflow) && (text === "" || r.id.includes(text)))
    .slice(0, SHOWN);
  const option = (value: string, label: string, chosen: string) => `<option value="${h(value)}"${value === chosen ? " selected" : ""}>${h(label)}</option>`;
  const filters = `<form class="filters" method="get" action="/">
<label>Status<select name="status">${option("", "any", status)}${STATUSES.map((s) => option(s, s, status)).join("")}</select></label>
<label>Workflow<select name="workflow">${option("", "any", workflow)}${workflows.map((w) => option(w, w, workflow)).join("")}</select></label>
<label>Id contains<input type="search" name="q" value="${h(text)}" placeholder="text in the id"></label>
<button type="submit" class="quiet">Filter</button>
</form>`;
  const rows = runs
    .map(
      (r) =>
        `<tr data-run="${h(r.id)}"><td class="id"><a href="${runHref(r.id)}">${h(r.id)}</a></td><td>${h(r.workflow)}</td><td>${badge(r.status)}</td><td>${r.attemptCount}</td><td class="muted">${h(when(r.createdAt))}</td><td class="muted">${h(when(r.updatedAt))}</td></tr>`,
    )
    .join("");
  const table = runs.length
    ? `<table class="runs"><thead><tr><th>Run</th><th>Workflow</th><th>Status</th><th>Attempts</th><th>Started</th><th>Updated</th></tr></thead><tbody>${rows}</tbody></table>`
    : `<p class="empty">${all.length ? "No run matches these filters." : "No runs in this store yet."}</p>`;
  const count = `<p class="muted small">${runs.length} of ${all.length} run${all.length === 1 ? "" : "s"}${runs.length === SHOWN ? ` (the newest ${SHOWN}: filter to see others)` : ""}</p>`;
  return { status: 200, title: "Runs", nav: "runs", main: `${flash(url)}<h1>Runs</h1>${filters}${count}${table}` };
}
