/**
 * Words for timeline entries and attempts, shared by `steplog show` (text) and the HTML page:
 * a glyph, a short status and a note. Everything recorded is passed through as plain text;
 * the caller escapes it for its medium (safe() for a terminal, escapeHtml for a page).
 */

import type { ErrorInfo } from "../base/errors.js";
import { command, formatDuration } from "./format.js";
import type { TimelineAttempt, TimelineEntry } from "./timeline.js";

export type Tone = "ok" | "bad" | "warn" | "reused" | "wait" | "muted" | "comp";

export interface EntryWords {
  glyph: string;
  tone: Tone;
  /** ran, reused, cut off, waiting, … */
  label: string;
  /** The longer note: why it failed, how it was resolved, what it waits for. */
  note: string;
}

export function errorText(error: ErrorInfo | undefined): string {
  if (!error) return "";
  const code = error.code ? `${error.code}: ` : error.name && error.name !== "Error" ? `${error.name}: ` : "";
  return code + asCommands(error.message);
}

const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;
const ENGINE_CALL = new RegExp(String.raw`engine\.(resolve|continue|compensate|get)\(${QUOTED}(?:, ${QUOTED})?(?:, \{ ([^}]*) \})?\)`, "g");

/**
 * A recorded message with the engine calls it suggests (steplog's errors are written for the
 * API: `engine.resolve("212", "charge", { redo: true })`) as the steplog commands that do the
 * same (`steplog resolve 212 charge --redo`), for the command's own views. A call it does not
 * know is left as it is.
 */
export function asCommands(message: string): string {
  return message.replace(ENGINE_CALL, (call: string, method: string, first: string, second: string | undefined, options: string | undefined) => {
    const id = JSON.parse(`"${first}"`) as string;
    const step = second === undefined ? undefined : (JSON.parse(`"${second}"`) as string);
    const opts = options?.trim();
    if (method === "resolve" && step !== undefined) {
      if (opts === "value") return command("steplog", "resolve", id, step, "--value", "<json>");
      if (opts === "redo: true") return command("steplog", "resolve", id, step, "--redo");
      return call;
    }
    if (step !== undefined) return call;
    if (method === "get" && opts === undefined) return command("steplog", "show", id);
    if (method === "compensate" && opts === undefined) return command("steplog", "compensate", id);
    if (method !== "continue") return call;
    if (opts === undefined) return command("steplog", "run", "--continue", "--id", id);
    if (opts === "force: true") return command("steplog", "run", "--continue", "--id", id, "--force");
    const from = new RegExp(`^fromStep: ${QUOTED}$`).exec(opts);
    if (from) return command("steplog", "run", "--continue", "--id", id, "--from-step", JSON.parse(`"${from[1]}"`) as string);
    return call;
  });
}

export function describeEntry(e: TimelineEntry, attempt: TimelineAttempt): EntryWords {
  if (e.kind === "reused") {
    if (e.handled)
      return { glyph: "↺", tone: "reused", label: "reused", note: `its failure thrown again, as attempt ${e.recordedBy} recorded it: ${errorText(e.error)}` };
    return {
      glyph: "↺",
      tone: "reused",
      label: "reused",
      note: `recorded by attempt ${e.recordedBy}${e.durationMs !== null ? `, which took ${formatDuration(e.durationMs)}` : ""}`,
    };
  }
  if (e.kind === "resolved") {
    return { glyph: "✓", tone: "ok", label: "resolved", note: `handed back: a person said it happened${personOf(e.resolution ?? {})}; not run` };
  }
  if (e.kind === "compensation") {
    const done = e.status === "compensated";
    return {
      glyph: "↶",
      tone: done ? "comp" : "bad",
      label: done ? "compensated" : "compensating",
      note: done ? "its compensate ran" : "its compensate did not finish; a compensate runs it again",
    };
  }
  const r = e.resolution;
  const resolvedBy = r?.attempt !== undefined ? ` by attempt ${r.attempt}` : "";
  if (e.wait) {
    const what =
      e.wait.kind === "event"
        ? `event ${JSON.stringify(e.wait.event)}`
        : e.wait.kind === "sleep"
          ? "its timer"
          : e.wait.kind === "child"
            ? `child run ${JSON.stringify(e.wait.child)}`
            : e.wait.kind === "turn"
              ? "its turn"
              : `approval`;
    const until = e.wait.until !== undefined ? ` until ${new Date(e.wait.until).toISOString()}` : "";
    if (e.status === "intended") return { glyph: "⏸", tone: "wait", label: "waiting", note: `for ${what}${until}` };
    if (e.status === "succeeded") return { glyph: "✓", tone: "ok", label: "waited", note: `for ${what}` };
    return { glyph: "✗", tone: e.handled ? "warn" : "bad", label: e.handled ? "failed, handled" : e.status, note: errorText(e.error) || `waited for ${what}` };
  }
  switch (e.status) {
    case "succeeded": {
      if (r?.policy === "query") return { glyph: "✓", tone: "ok", label: "found done", note: `cut off, then found done by its query${resolvedBy}` };
      if (r?.policy === "supplied") return { glyph: "✓", tone: "ok", label: "supplied", note: "value given on continue" };
      if (r?.policy === "escalate") return { glyph: "✓", tone: "ok", label: "resolved", note: `cut off; a person said it happened${personOf(r)}` };
      return { glyph: "✓", tone: "ok", label: "ran", note: e.calls > 1 ? `${e.calls} calls` : "" };
    }
    case "failed": {
      if (r?.policy === "redrive") return { glyph: "✗", tone: "bad", label: "cut off", note: `the process died inside it; re-driven${resolvedBy}` };
      if (r?.policy === "query")
        return { glyph: "✗", tone: "bad", label: "cut off", note: `the process died inside it; its query found no effect; re-driven${resolvedBy}` };
      if (r?.policy === "compensate")
        return { glyph: "✗", tone: "bad", label: "cut off", note: `the process died inside it; compensated and run again${resolvedBy}` };
      if (r?.policy === "escalate")
        return { glyph: "✗", tone: "bad", label: "cut off", note: `a person said it did not happen${personOf(r)}; redone on continue` };
      if (e.handled)
        return { glyph: "✗", tone: "warn", label: "failed, handled", note: `${errorText(e.error)} (the workflow went on; a continue throws it again)` };
      return { glyph: "✗", tone: "bad", label: "failed", note: errorText(e.error) };
    }
    case "stopped":
      return { glyph: "■", tone: "warn", label: "stopped", note: errorText(e.error) };
    case "escalated":
      return {
        glyph: "⚠",
        tone: "warn",
        label: "escalated",
        note: `cut off inside ${/^[aeiou]/.test(e.effect) ? "an" : "a"} ${e.effect} step; waits for a person (steplog resolve)`,
      };
    case "compensated":
      return { glyph: "↶", tone: "comp", label: "compensated", note: "" };
    case "intended":
      if (attempt.ending === null) return { glyph: "…", tone: "wait", label: "running", note: "" };
      return {
        glyph: "✗",
        tone: "bad",
        label: "cut off",
        note: "intent recorded, no outcome: the attempt ended inside it; a continue resolves it by its policy",
      };
    default:
      return { glyph: "?", tone: "muted", label: e.status, note: errorText(e.error) };
  }
}

function personOf(r: { by?: string }): string {
  return r.by ? ` (${r.by})` : "";
}

export function attemptTone(ending: string | null): Tone {
  if (ending === "completed") return "ok";
  if (ending === "compensated") return "comp";
  if (ending === "waiting" || ending === null) return "wait";
  if (ending === "escalated" || ending === "stopped") return "warn";
  return "bad";
}

export function attemptLabel(a: TimelineAttempt): string {
  return a.ending ?? "running";
}
