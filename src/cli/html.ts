/**
 * `steplog show --html`: one self-contained page (inline CSS, no script, no network, no
 * external asset) with the run's timeline drawn as bars, attempt by attempt, step by step.
 *
 * Every recorded value (ids, names, errors, values, sources) is untrusted text: it is escaped
 * before it enters the page, it only ever lands in text or quoted attribute values, never in a
 * URL, a style or a class; styles and classes come from numbers and fixed tables only. A
 * Content-Security-Policy that allows no script and no fetch backs that up.
 */

import { attemptLabel, attemptTone, describeEntry, errorText, type Tone } from "./describe.js";
import { budgetWaitText, formatAge, formatDuration, formatUsage, oneLineJson, prettyJson, safe, truncate } from "./format.js";
import type { Timeline, TimelineAttempt, TimelineEntry } from "./timeline.js";
import { nestedKeys } from "./nesting.js";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };

/** Text for an HTML text node or a quoted attribute value. Control and bidi characters become visible escapes. */
export function escapeHtml(text: string, multiline = false): string {
  return safe(String(text), multiline).replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

const TONES: Record<Tone, string> = { ok: "ok", bad: "bad", warn: "warn", reused: "reused", wait: "wait", muted: "muted", comp: "comp" };
const toneClass = (tone: Tone) => `t-${TONES[tone] ?? "muted"}`;

/** A percentage for a style attribute: a finite number, clamped, with fixed decimals. */
function pct(n: number): string {
  const v = Number.isFinite(n) ? Math.min(100, Math.max(0, n)) : 0;
  return `${v.toFixed(2)}%`;
}

export function renderHtml(t: Timeline, now: number): string {
  const e = escapeHtml;
  const longest = Math.max(1, ...t.attempts.map((a) => a.durationMs ?? 0));
  const status = `<span class="badge ${toneClass(runTone(t.status))}">${e(t.status)}</span>`;
  const usage = formatUsage(t.totals.usage);
  const savedUsage = formatUsage(t.saved.usage);
  const facts: Array<[string, string]> = [
    ["workflow", `${e(t.workflow)}${t.version ? ` <span class="muted">${e(t.version)}</span>` : ""}`],
    ["source", t.source ? `<code>${e(t.source)}</code>` : `<span class="muted">none recorded</span>`],
    ["args", `<code>${e(oneLineJson(t.args, 600))}</code>`],
    ["started", `${e(t.createdAt)} <span class="muted">(${e(formatAge(Date.parse(t.createdAt), now))})</span>`],
    ["updated", `${e(t.updatedAt)} <span class="muted">(${e(formatAge(Date.parse(t.updatedAt), now))})</span>`],
    ["attempts", String(t.attemptCount)],
    ["time", `${e(formatDuration(t.totals.attemptsMs))} in attempts, ${e(formatDuration(t.totals.stepsMs))} in steps`],
    ["cost", usage ? e(usage) : `<span class="muted">no usage recorded</span>`],
    [
      "reuse saved",
      t.saved.steps === 0
        ? `<span class="muted">nothing reused</span>`
        : `${t.saved.steps} step${t.saved.steps === 1 ? "" : "s"}, ${e(formatDuration(t.saved.ms))}${savedUsage ? ` · ${e(savedUsage)}` : ""}`,
    ],
  ];
  if (t.waitingFor) facts.push(["waiting for", e(waitText(t))]);
  if (t.parent !== null) facts.push(["parent run", `<code>${e(t.parent)}</code>`]);
  if (t.children.length > 0) facts.push(["child runs", t.children.map((c) => `<code>${e(c.id)}</code> <span class="muted">${e(c.status)}</span>`).join(", ")]);
  const parts: string[] = [];
  parts.push(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>steplog · run ${e(truncate(t.id, 80))}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>Run <code>${e(t.id)}</code> ${status}</h1>
<dl class="facts">
${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("\n")}
</dl>
</header>
<main>`);
  if (t.error) parts.push(`<section class="box t-bad"><h2>Error</h2><pre>${e(errorText(t.error), true)}</pre></section>`);
  if ("value" in t) parts.push(`<section class="box t-ok"><h2>Value</h2><pre>${e(truncate(prettyJson(t.value), 4000), true)}</pre></section>`);
  if (t.escalations.length) {
    parts.push(
      `<section class="box t-warn"><h2>Waits for a person</h2><ul>${t.escalations
        .map((x) => `<li><strong>${e(x.step)}</strong> (${e(x.effect)}, idempotency key <code>${e(x.idempotencyKey)}</code>): ${e(x.summary)}</li>`)
        .join("")}</ul></section>`,
    );
  }
  for (const attempt of t.attempts) parts.push(renderAttempt(attempt, longest));
  if (t.attempts.length === 0) parts.push(`<p class="muted">No attempts recorded.</p>`);
  if (t.next.length) parts.push(`<section class="box next"><h2>Next</h2>${t.next.map((c) => `<pre>${e(c)}</pre>`).join("")}</section>`);
  parts.push(`</main>
<footer>steplog show --html · ${e(new Date(now).toISOString())} · ${t.totals.rows} step row${t.totals.rows === 1 ? "" : "s"}</footer>
</body>
</html>
`);
  return parts.join("\n");
}

function renderAttempt(a: TimelineAttempt, longest: number): string {
  const e = escapeHtml;
  const span = Math.max(
    1,
    a.durationMs ?? 0,
    ...a.entries.filter((x) => x.kind !== "reused" && x.kind !== "resolved").map((x) => (x.endedAt ?? x.startedAt) - a.startedAt),
  );
  const meta = [
    a.durationMs === null ? "" : formatDuration(a.durationMs),
    `pid ${a.pid} on ${a.host}`,
    new Date(a.startedAt).toISOString(),
    a.fromStep ? `from step ${a.fromStep}` : "",
    a.forced ? "forced" : "",
  ]
    .filter(Boolean)
    .map((s) => e(s))
    .join(" · ");
  // A session's tool calls under the session (durableClaudeQuery): indented, by their own name.
  const nested = nestedKeys(a.entries.map((entry) => entry.key));
  const rows = a.entries.map((entry) => renderEntry(entry, a, span, nested.get(entry.key)?.rest)).join("\n");
  return `<section class="attempt">
<h2>Attempt ${a.number} <span class="badge ${toneClass(attemptTone(a.ending))}">${e(attemptLabel(a))}</span> <span class="muted small">${meta}</span></h2>
<div class="overall"><span class="bar ${toneClass(attemptTone(a.ending))}" style="width:${pct(((a.durationMs ?? 0) / longest) * 100)}"></span></div>
${a.error ? `<p class="err">${e(errorText(a.error))}</p>` : ""}
<ol class="rows">
${rows || `<li class="row"><span class="label muted">no steps</span><span class="track"></span><span class="info"></span></li>`}
<li class="row axisrow"><span></span><span class="axis"><span>0</span><span>${e(formatDuration(span))}</span></span><span></span></li>
</ol>
</section>`;
}

function renderEntry(entry: TimelineEntry, a: TimelineAttempt, span: number, inner?: string): string {
  const e = escapeHtml;
  const words = describeEntry(entry, a);
  let bar: string;
  if (entry.kind === "reused" || entry.kind === "resolved") {
    bar = `<span class="bar ${toneClass(words.tone)} marker" title="${e(`${words.label}: ${words.note}`)}"></span>`;
  } else {
    const left = ((entry.startedAt - a.startedAt) / span) * 100;
    const duration = entry.durationMs ?? Math.max(0, (a.endedAt ?? a.startedAt + span) - entry.startedAt);
    const width = Math.max(0.6, (duration / span) * 100);
    const open = entry.endedAt === null ? " open" : "";
    bar = `<span class="bar ${toneClass(words.tone)}${open}" style="left:${pct(left)};width:${pct(Math.min(width, 100 - Math.min(99.4, Math.max(0, left))))}" title="${e(`${entry.key}: ${words.label}${words.note ? ` — ${words.note}` : ""}`)}"></span>`;
  }
  const time =
    entry.kind === "reused"
      ? `saved ${formatDuration(entry.durationMs ?? 0)}`
      : entry.kind === "resolved" || entry.durationMs === null
        ? ""
        : formatDuration(entry.durationMs);
  const usage = formatUsage(entry.usage);
  const info = [time, usage].filter(Boolean).join(" · ");
  const note = words.note ? `<span class="note">${e(truncate(words.note, 300))}</span>` : "";
  // What it returned, and each failed call's error: as text, like every recorded value.
  const input = "input" in entry ? `<span class="value input"><code>input ${e(oneLineJson(entry.input, 300))}</code></span>` : "";
  const value = "value" in entry ? `<span class="value"><code>= ${e(oneLineJson(entry.value, 300))}</code></span>` : "";
  const calls = (entry.callErrors ?? [])
    .filter(() => (entry.callErrors?.length ?? 0) > 1 || entry.calls > 1)
    .map((c) => `<span class="call">call ${c.call} ✗ ${e(truncate(errorText(c.error), 300))}</span>`)
    .join("");
  const indent = inner === undefined ? "" : ` style="padding-left:1.5em"`;
  return `<li class="row ${toneClass(words.tone)}${inner === undefined ? "" : " nested"}"><span class="label"${indent}><span class="glyph">${e(words.glyph)}</span> <span class="key">${e(inner ?? entry.key)}</span> <span class="muted small">${e(words.label)}</span>${note}${input}${value}${calls}</span><span class="track">${bar}</span><span class="info">${e(info)}</span></li>`;
}

function waitText(t: Timeline): string {
  const w = t.waitingFor!;
  const until = w.until !== undefined ? ` until ${new Date(w.until).toISOString()}` : "";
  if (w.kind === "event") return `event ${JSON.stringify(w.event)} (step ${w.step})${until}`;
  if (w.kind === "sleep") return `timer of step ${w.step}${until}`;
  if (w.kind === "child") return `child run ${JSON.stringify(w.child)} (step ${w.step})${until}`;
  if (w.kind === "turn") return `its turn (the workflow's concurrency or rate limit)`;
  if (w.kind === "budget") return budgetWaitText(w);
  return `approval of step ${w.step}`;
}

function runTone(status: string): Tone {
  if (status === "completed") return "ok";
  if (status === "compensated") return "comp";
  if (status === "waiting" || status === "running" || status === "ready") return "wait";
  if (status === "escalated" || status === "stopped") return "warn";
  return "bad";
}

const CSS = `
:root{--ok:#2f9e5e;--bad:#d64545;--warn:#d9980f;--reused:#4f7fe0;--wait:#8a63d2;--comp:#b0509f;--muted:#7a8290;--bg:#fbfbfc;--fg:#1d2330;--line:#e3e6eb}
*{box-sizing:border-box}
body{margin:0;padding:24px 32px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;background:var(--bg);color:var(--fg)}
h1{font-size:22px;margin:0 0 12px;word-break:break-all}
h2{font-size:16px;margin:0 0 8px}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
pre{margin:4px 0;white-space:pre-wrap;word-break:break-word;background:#f1f3f6;padding:6px 8px;border-radius:4px}
.muted{color:var(--muted)}.small{font-size:12px;font-weight:normal}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;vertical-align:middle;background:var(--muted)}
.badge.t-ok{background:var(--ok)}.badge.t-bad{background:var(--bad)}.badge.t-warn{background:var(--warn)}.badge.t-reused{background:var(--reused)}.badge.t-wait{background:var(--wait)}.badge.t-comp{background:var(--comp)}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;margin:0 0 18px}
.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
.box{border-left:4px solid var(--muted);background:#fff;padding:8px 12px;margin:0 0 14px;border-radius:4px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.box.t-bad{border-color:var(--bad)}.box.t-ok{border-color:var(--ok)}.box.t-warn{border-color:var(--warn)}.box.next{border-color:var(--reused)}
.attempt{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px 14px;margin:0 0 16px}
.overall{height:6px;background:#eef0f3;border-radius:3px;margin:0 0 10px;position:relative}
.overall .bar{position:absolute;left:0;top:0;bottom:0;border-radius:3px;min-width:3px}
.err{color:var(--bad);margin:4px 0 8px;word-break:break-word}
.rows{list-style:none;margin:0;padding:0}
.row{display:grid;grid-template-columns:minmax(220px,32%) 1fr 230px;gap:10px;align-items:center;padding:4px 0;border-top:1px solid var(--line)}
.row:first-child{border-top:none}
.label{overflow:hidden;text-overflow:ellipsis;word-break:break-all}
.label .note{display:block;font-size:12px;color:var(--muted)}
.label .value,.label .call{display:block;font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.label .call{color:var(--bad)}
.glyph{display:inline-block;width:1.2em;text-align:center;font-weight:700}
.t-ok .glyph{color:var(--ok)}.t-bad .glyph{color:var(--bad)}.t-warn .glyph{color:var(--warn)}.t-reused .glyph{color:var(--reused)}.t-wait .glyph{color:var(--wait)}.t-comp .glyph{color:var(--comp)}
.track{position:relative;height:18px;background:#f1f3f6;border-radius:3px}
.track .bar{position:absolute;top:2px;bottom:2px;border-radius:3px;min-width:4px}
.bar.t-ok{background:var(--ok)}.bar.t-bad{background:var(--bad)}.bar.t-warn{background:var(--warn)}.bar.t-wait{background:var(--wait)}.bar.t-comp{background:var(--comp)}.bar.t-muted{background:var(--muted)}
.bar.t-reused{background:repeating-linear-gradient(45deg,var(--reused) 0 4px,#cfdcf8 4px 8px)}
.bar.marker{left:0;width:26px}
.bar.open{background-image:repeating-linear-gradient(-45deg,rgba(255,255,255,.45) 0 5px,transparent 5px 10px)}
.info{font-size:12px;color:var(--muted);text-align:right;overflow-wrap:anywhere}
.axisrow{border-top:none;padding-top:0}
.axis{display:flex;justify-content:space-between;font-size:11px;color:var(--muted)}
footer{color:var(--muted);font-size:12px;margin-top:20px}
`;
