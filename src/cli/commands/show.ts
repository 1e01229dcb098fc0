/** steplog show <id>: the run's timeline, attempt by attempt; --json; --html FILE. */

import fs from "node:fs";
import path from "node:path";
import { booleanOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { attemptLabel, attemptTone, describeEntry, errorText, type Tone } from "../describe.js";
import { CliError, EXIT } from "../exit.js";
import {
  budgetText,
  budgetWaitText,
  columns,
  formatAge,
  formatDuration,
  formatUsage,
  oneLineJson,
  prettyJson,
  safe,
  truncate,
  type Paint,
  type Style,
} from "../format.js";
import { renderHtml } from "../html.js";
import { buildTimeline, timelineJson, type Timeline, type TimelineEntry } from "../timeline.js";
import { nestedKeys } from "../nesting.js";

export const show: Command = {
  help: {
    name: "show",
    summary: "a run's timeline: every attempt, every step, time, cost, what reuse saved, what to type next",
    usage: ["steplog show <id> [--full] [--json] [--html FILE]"],
    description: [
      "Prints the run attempt by attempt: each step it reused (↺, with the attempt that recorded it) or ran (✓ ✗ ■ ⚠), how long it took, its error, its usage, what it acted on (input …) and what it returned (= …, each cut to a line; --full for all of it) and the error of each call that failed (a retried step's too); escalations waiting for a person; the totals of time and recorded cost; what reuse saved (the time and cost of the original rows of the reused steps); and the commands that move the run on. --json carries the same, with every value and the run's args.",
      "--html FILE writes, instead, a self-contained page (no script, no network) with the timeline drawn as bars per attempt and step.",
    ],
    options: {
      html: { type: "string", value: "FILE", description: "Write the timeline as a self-contained HTML page to FILE (instead of printing it)." },
      full: { type: "boolean", description: "Print each step's input and value whole (pretty JSON), not cut to a line." },
    },
    positionals: { min: 1, max: 1, names: ["<id>"] },
    examples: ["steplog show 212", "steplog show 212 --json | jq .totals", "steplog show 212 --html run-212.html"],
  },
  async run(session, parsed) {
    const id = parsed.positionals[0]!;
    const timeline = await session.read(async (engine) => {
      const run = await engine.get(id, { redact: true });
      const escalations = run.status === "escalated" ? (await engine.escalations()).filter((e) => e.runId === id) : [];
      return buildTimeline(run, escalations, session.now());
    });
    const htmlFile = stringOption(parsed, "html");
    let written: string | undefined;
    if (htmlFile !== undefined) {
      written = path.resolve(session.io.cwd, htmlFile);
      try {
        // Owner-only, as the stores are: the page holds decrypted values.
        fs.writeFileSync(written, renderHtml(timeline, session.now()), { mode: 0o600 });
        fs.chmodSync(written, 0o600);
      } catch (error) {
        throw new CliError(`Could not write ${written}: ${(error as Error).message}`, EXIT.usage, "HTML_NOT_WRITTEN");
      }
    }
    if (session.json) session.printJson({ ...(timelineJson(timeline) as object), ...(written ? { html: written } : {}) });
    else if (written) session.out(`HTML timeline of run ${safe(id)} written to ${safe(written)}`);
    else session.lines(renderTimeline(timeline, session.paint, session.now(), { full: booleanOption(parsed, "full") }));
    return EXIT.ok;
  },
};

const TONE_STYLE: Record<Tone, Style> = { ok: "green", bad: "red", warn: "yellow", reused: "cyan", wait: "magenta", muted: "gray", comp: "magenta" };

export function renderTimeline(t: Timeline, paint: Paint, now: number, options: { full?: boolean } = {}): string[] {
  const out: string[] = [];
  const gray = (s: string) => paint("gray", s);
  const statusStyle =
    TONE_STYLE[
      t.status === "completed"
        ? "ok"
        : t.status === "waiting" || t.status === "running" || t.status === "ready"
          ? "wait"
          : t.status === "escalated" || t.status === "stopped"
            ? "warn"
            : t.status === "compensated"
              ? "comp"
              : "bad"
    ];
  out.push(
    `${paint("bold", `Run ${safe(t.id)}`)} · ${safe(t.workflow)}${t.version ? gray(` ${safe(t.version)}`) : ""} · ${paint([statusStyle, "bold"], t.status)}`,
  );
  const facts: string[][] = [];
  facts.push(["  source", t.source ? safe(t.source) : gray("none recorded (give the workflow file to continue)")]);
  facts.push(["  args", oneLineJson(t.args, 200)]);
  facts.push(["  started", `${t.createdAt} ${gray(`(${formatAge(Date.parse(t.createdAt), now)})`)}`]);
  if (t.updatedAt !== t.createdAt) facts.push(["  updated", `${t.updatedAt} ${gray(`(${formatAge(Date.parse(t.updatedAt), now)})`)}`]);
  if (t.waitingFor) {
    const w = t.waitingFor;
    const until = w.until !== undefined ? ` until ${new Date(w.until).toISOString()}` : "";
    const what =
      w.kind === "event"
        ? `event ${safe(JSON.stringify(w.event))} (step ${safe(w.step)})`
        : w.kind === "sleep"
          ? `the timer of step ${safe(w.step)}`
          : w.kind === "child"
            ? `child run ${safe(w.child ?? "?")} (step ${safe(w.step)})`
            : w.kind === "turn"
              ? `its turn (the workflow's concurrency or rate limit)`
              : w.kind === "budget"
                ? budgetWaitText(w)
                : `approval of step ${safe(w.step)}`;
    facts.push(["  waiting", `for ${what}${until}`]);
  }
  const budget = budgetText(t);
  if (budget) facts.push(["  budget", budget]);
  if (t.parent !== null) facts.push(["  parent", `${safe(t.parent)} ${gray(`(steplog show ${safe(t.parent)})`)}`]);
  t.children.forEach((c, i) => facts.push([i === 0 ? "  children" : "", `${safe(c.id)} ${gray(`${safe(c.workflow)}, ${c.status}`)}`]));
  out.push(...columns(facts));
  for (const a of t.attempts) {
    out.push("");
    const style = TONE_STYLE[attemptTone(a.ending)];
    const meta = [
      a.durationMs === null ? "" : formatDuration(a.durationMs),
      `pid ${a.pid} on ${safe(a.host)}`,
      a.fromStep ? `from step ${safe(a.fromStep)}` : "",
      a.forced ? "forced" : "",
    ]
      .filter(Boolean)
      .join(" · ");
    out.push(`${paint("bold", `Attempt ${a.number}`)} ${paint(style, attemptLabel(a))} ${gray(`· ${meta}`)}`);
    const rows: string[][] = [];
    /** Lines under each row: its value, each failed call's error. */
    const under: string[][] = [];
    // A session's tool calls under the session (durableClaudeQuery): indented, by their own name.
    const nested = nestedKeys(a.entries.map((e) => e.key));
    for (const e of a.entries) {
      under.push(detailLines(e, paint, options.full === true));
      const words = describeEntry(e, a);
      const time = e.kind === "reused" || e.kind === "resolved" || e.durationMs === null ? "" : formatDuration(e.durationMs);
      const usage = formatUsage(e.usage);
      const note =
        e.kind === "reused" && e.handled
          ? `its failure thrown again, from attempt ${e.recordedBy}`
          : e.kind === "reused"
            ? `from attempt ${e.recordedBy}${e.durationMs !== null ? `, saved ${formatDuration(e.durationMs)}` : ""}${usage ? ` · ${usage}` : ""}`
            : [words.note ? safe(words.note.split("\n")[0] ?? "") : "", usage].filter(Boolean).join(" · ");
      rows.push([
        `  ${nested.has(e.key) ? "  " : ""}${paint(TONE_STYLE[words.tone], words.glyph)} ${safe(nested.get(e.key)?.rest ?? e.key)}`,
        paint(TONE_STYLE[words.tone], words.label),
        gray(time),
        e.status === "failed" && e.kind === "ran" && !e.resolution ? paint("red", note) : gray(note),
      ]);
    }
    if (rows.length === 0) out.push(gray("  (no steps)"));
    columns(rows).forEach((line, i) => out.push(line, ...under[i]!));
    if (a.error && a.ending !== "completed") out.push(`  ${gray("ended:")} ${safe(errorText(a.error).split("\n")[0] ?? "")}`);
  }
  out.push("");
  const cost = formatUsage(t.totals.usage);
  out.push(
    `${paint("bold", "Total")}   ${t.attempts.length} attempt${t.attempts.length === 1 ? "" : "s"}, ${formatDuration(t.totals.attemptsMs)} in attempts, ${formatDuration(t.totals.stepsMs)} in steps` +
      (cost ? ` · ${cost}` : gray(" · no usage recorded")),
  );
  const saved = formatUsage(t.saved.usage);
  out.push(
    `${paint("bold", "Saved")}   ${t.saved.steps === 0 ? gray("nothing reused yet") : `${t.saved.steps} reused step${t.saved.steps === 1 ? "" : "s"}: ${formatDuration(t.saved.ms)}${saved ? ` · ${saved}` : ""}`}`,
  );
  if ("value" in t) out.push(`${paint("bold", "Value")}   ${oneLineJson(t.value, 300)}`);
  if (t.error && t.status !== "completed") out.push(`${paint("bold", "Error")}   ${paint("red", safe(errorText(t.error)).slice(0, 400))}`);
  if (t.escalations.length) {
    out.push("", paint(["yellow", "bold"], "Waits for a person"));
    for (const e of t.escalations) out.push(`  ⚠ ${safe(e.step)}: ${safe(e.summary)}`);
  }
  if (t.next.length) {
    out.push("", paint("bold", "Next"));
    for (const c of t.next) out.push(`  ${paint("cyan", c)}`);
  }
  return out;
}

/**
 * The lines under a step's row: what it acted on (`input …`, likewise), what it returned (`= …`, one line cut to fit, or with `full`
 * the whole value as pretty JSON) and, when a call failed, each failed call's error.
 */
function detailLines(e: TimelineEntry, paint: Paint, full: boolean): string[] {
  const lines: string[] = [];
  const indent = "      ";
  if ("input" in e) {
    if (full) {
      const text = prettyJson(e.input).split("\n");
      lines.push(...text.map((line, i) => paint("gray", `${indent}${i === 0 ? "input " : "      "}${safe(line)}`)));
    } else lines.push(paint("gray", `${indent}input ${oneLineJson(e.input, 100)}`));
  }
  if ("value" in e) {
    if (full) {
      const text = prettyJson(e.value).split("\n");
      lines.push(...text.map((line, i) => paint("gray", `${indent}${i === 0 ? "= " : "  "}${safe(line)}`)));
    } else lines.push(paint("gray", `${indent}= ${oneLineJson(e.value, 100)}`));
  }
  if (e.callErrors && (e.callErrors.length > 1 || e.calls > 1)) {
    for (const c of e.callErrors) lines.push(paint("gray", `${indent}call ${c.call} ✗ ${truncate(safe(errorText(c.error)).split("\n")[0] ?? "", 120)}`));
  }
  return lines;
}
