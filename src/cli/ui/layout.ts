/**
 * What every UI page shares: the page around <main>, the context pages are rendered with, and
 * the helpers for the markup they all write. Every recorded value is untrusted text: it goes
 * through `h` (escapeHtml) into text or a quoted attribute, never into a URL without
 * encodeURIComponent, a style or a class name (classes and styles come from fixed tables and
 * numbers only), as in the HTML timeline.
 */

import crypto from "node:crypto";
import type { Engine } from "../../engine/engine.js";
import { escapeHtml } from "../html.js";

export const h = escapeHtml;

export interface UiContext {
  engine: Engine;
  /** No buttons, and every POST refused. */
  readOnly: boolean;
  /** The per-process token every form carries (a POST without it is refused). */
  token: string;
  /** Whether redaction rules were given (--redact, STEPLOG_REDACT): an export is then redacted too. */
  redacting: boolean;
  /** Where the records are, for the header ("/app/.steplog/steplog.db"). */
  storeLabel: string;
  now(): number;
  /** Continue a run (loading its workflow from its recorded source) in the background; a refusal is thrown at once. */
  continueRun(id: string, options: { force?: boolean }): Promise<void>;
}

export type Nav = "runs" | "queue";

export interface Rendered {
  status: number;
  title: string;
  nav: Nav;
  /** The inner HTML of <main>: what the live updates replace. */
  main: string;
}

/** A short digest of a rendering of <main>: the live stream compares renderings by it. */
export function mainDigest(main: string): string {
  return crypto.createHash("sha256").update(main).digest("base64url").slice(0, 22);
}

/** A run's page. */
export const runHref = (id: string) => `/runs/${encodeURIComponent(id)}`;

/** The whole page around a rendering of <main>. */
export function page(ctx: UiContext, rendered: Rendered): string {
  const link = (nav: Nav, href: string, label: string) => `<a href="${href}"${rendered.nav === nav ? ` class="here"` : ""}>${label}</a>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(rendered.title)} · steplog</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<link rel="stylesheet" href="/ui.css">
<script src="/ui.js" defer></script>
</head>
<body>
<header class="top"><span class="brand">steplog</span>${link("runs", "/", "Runs")}${link("queue", "/queue", "Human queue")}<span class="where">${h(ctx.storeLabel)}${ctx.readOnly ? " · read-only" : ""}</span><span class="live"></span></header>
<main data-digest="${mainDigest(rendered.main)}">${rendered.main}</main>
</body>
</html>
`;
}

/** A flash message from the query (?done=… after an action, ?error=… when it was refused). */
export function flash(url: URL): string {
  const done = url.searchParams.get("done");
  const error = url.searchParams.get("error");
  return (done ? `<div class="flash">${h(done)}</div>` : "") + (error ? `<div class="flash bad">${h(error)}</div>` : "");
}

/** A form that POSTs an action with the page's token; nothing in read-only mode. */
export function actionForm(ctx: UiContext, action: string, fields: string, button: string, style = ""): string {
  if (ctx.readOnly) return "";
  return `<form method="post" action="${action}"><input type="hidden" name="token" value="${h(ctx.token)}">${fields}<button type="submit"${style ? ` class="${style}"` : ""}>${button}</button></form>`;
}

/** A status as a coloured badge (the colour from a fixed table). */
export function badge(status: string): string {
  const tone =
    status === "completed"
      ? "t-ok"
      : status === "waiting" || status === "running" || status === "ready"
        ? "t-wait"
        : status === "escalated" || status === "stopped" || status === "interrupted"
          ? "t-warn"
          : status === "compensated"
            ? "t-comp"
            : "t-bad";
  return `<span class="badge ${tone}">${h(status)}</span>`;
}

/** A time as the UI shows it: ISO-8601 to the second, in UTC (the same in every view and test). */
export function when(iso: string | null | undefined): string {
  if (!iso) return "";
  return `${iso.slice(0, 19).replace("T", " ")}Z`;
}
