/**
 * The UI's runs list: the runs of the store, newest first, filtered by status, workflow and text
 * in the id, a page at a time. "Older" goes on after the last run shown (a keyset cursor: runs
 * started meanwhile do not shift the pages), and the count line says how many runs the filter
 * matches and which of them the page shows.
 */

import type { ListFilter } from "../../engine/api.js";
import type { RunStatus } from "../../store/types.js";
import { isSteplogError } from "../../base/errors.js";
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

/** Rows a page shows. */
export const PAGE_SIZE = 100;

const number = (n: number) => n.toLocaleString("en-US");

export async function runsPage(ctx: UiContext, url: URL): Promise<Rendered> {
  const asked = url.searchParams.get("status") ?? "";
  const status = (STATUSES as readonly string[]).includes(asked) ? (asked as RunStatus) : "";
  const workflow = url.searchParams.get("workflow") ?? "";
  const text = (url.searchParams.get("q") ?? "").trim();
  const filter: ListFilter = { ...(status ? { status } : {}), ...(workflow ? { workflow } : {}), ...(text ? { idContains: text } : {}) };
  const filtered = Object.keys(filter).length > 0;
  const everything = await ctx.engine.count();
  const matching = filtered ? await ctx.engine.count(filter) : everything;
  let after = url.searchParams.get("after") ?? "";
  let notice = "";
  let page;
  try {
    // One more than shown: whether there is an older page.
    page = await ctx.engine.list({ ...filter, limit: PAGE_SIZE + 1, ...(after ? { after } : {}) });
  } catch (error) {
    if (!after || !isSteplogError(error, "INVALID_OPTION")) throw error;
    notice = `<div class="flash bad">There is no run ${h(JSON.stringify(after))} to list after: the newest runs are shown.</div>`;
    after = "";
    page = await ctx.engine.list({ ...filter, limit: PAGE_SIZE + 1 });
  }
  const runs = page.slice(0, PAGE_SIZE);
  // The runs before this page are those not left after its cursor.
  const first = after ? matching.runs - (await ctx.engine.count({ ...filter, after })).runs + 1 : 1;

  const workflows = [...new Set([...everything.workflows.map((w) => w.workflow), ...(workflow ? [workflow] : [])])].sort();
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
    : `<p class="empty">${everything.runs ? "No run matches these filters." : "No runs in this store yet."}</p>`;
  const slice = runs.length ? `${number(first)}–${number(first + runs.length - 1)} of ` : "";
  const of = filtered
    ? `${number(matching.runs)} run${matching.runs === 1 ? "" : "s"} matching these filters (${number(everything.runs)} in all)`
    : `${number(everything.runs)} run${everything.runs === 1 ? "" : "s"}, newest first`;
  const count = `<p class="count muted small">${slice}${of}</p>`;
  // Links keep the filters; Older goes on after the last run shown.
  const href = (cursor: string) => {
    const query = new URLSearchParams({
      ...(status ? { status } : {}),
      ...(workflow ? { workflow } : {}),
      ...(text ? { q: text } : {}),
      ...(cursor ? { after: cursor } : {}),
    });
    return `/${query.size ? `?${query}` : ""}`;
  };
  const links = [
    after ? `<a class="newest" href="${h(href(""))}">← Newest</a>` : "",
    page.length > PAGE_SIZE ? `<a class="older" href="${h(href(runs.at(-1)!.id))}">Older →</a>` : "",
  ].filter(Boolean);
  const pages = links.length ? `<nav class="pages">${links.join("")}</nav>` : "";
  return { status: 200, title: "Runs", nav: "runs", main: `${flash(url)}${notice}<h1>Runs</h1>${filters}${count}${table}${pages}` };
}
