/**
 * The live progress view of `steplog run`: a pure function from progress events to lines
 * (renderProgress, what tests check), and LiveProgress, which prints those lines as events
 * arrive: on a terminal the running steps spin in place at the bottom; elsewhere each line is
 * printed once, when it is final.
 */

import type { ProgressEvent } from "../steps/attempt-settings.js";
import type { ErrorInfo } from "../base/errors.js";
import { formatAge, formatDuration, HOUR_MS, painter, safe, stripAnsi, truncate, type Paint } from "./format.js";
import type { Output } from "./session.js";

/** A progress event with the time it arrived (ms), as LiveProgress stamps it. */
export type TimedEvent = ProgressEvent & { at?: number };

const KEY_WIDTH = 12;

export const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export type StepState = "running" | "succeeded" | "failed" | "reused" | "resolved" | "compensated";

export interface StepLine {
  kind: "step";
  /** The run the step belongs to: a run's child runs report their steps through the same engine. */
  runId: string;
  attempt: number;
  key: string;
  state: StepState;
  retry: number;
  startedAt?: number;
  durationMs?: number;
  error?: ErrorInfo;
  /** For reused steps: the attempt that recorded the value, and when. */
  recordedBy?: number;
  recordedAt?: number;
  /** How a cut-off step (or a supplied value) was settled before or instead of running. */
  resolution?: { policy: string; found: string };
}

export interface AttemptLine {
  kind: "attempt";
  attempt: number;
  runId: string;
  workflow: string;
  fromStep: string | undefined;
  /** The run's steps go on after another run's (a child run's) lines: its header again. */
  resumed?: true;
}

export interface EndLine {
  kind: "end";
  runId: string;
  /** Not the first run of the view (a child run): its ending names it. */
  other: boolean;
  attempt: number;
  status: string;
  runStatus: string;
  error?: ErrorInfo;
}

export type ProgressLine = AttemptLine | StepLine | EndLine;

/**
 * Fold events into lines: one per attempt start, one per step key (its latest state), one per
 * ending. Events of several runs (a run and its child runs) each keep to their own run; when one
 * run's lines go on after another's, its header is repeated.
 */
export function progressModel(events: readonly TimedEvent[]): ProgressLine[] {
  const lines: ProgressLine[] = [];
  const runs = new Map<string, { header: AttemptLine; byKey: Map<string, StepLine> }>();
  let first: string | undefined;
  let current: string | undefined;
  /** Make `runId` the run whose lines come next: its header again if another run's came between. */
  const switchTo = (runId: string) => {
    if (current === runId) return;
    current = runId;
    const known = runs.get(runId);
    if (known) lines.push({ ...known.header, resumed: true });
  };
  for (const e of events) {
    if (e.type === "claim-waiting") continue;
    first ??= e.runId;
    if (e.type === "attempt-started") {
      const header: AttemptLine = { kind: "attempt", attempt: e.attempt, runId: e.runId, workflow: e.workflow, fromStep: e.fromStep };
      runs.set(e.runId, { header, byKey: new Map() });
      current = e.runId;
      lines.push(header);
      continue;
    }
    switchTo(e.runId);
    const run = runs.get(e.runId) ?? { header: { kind: "attempt" as const, attempt: 0, runId: e.runId, workflow: "", fromStep: undefined }, byKey: new Map() };
    runs.set(e.runId, run);
    foldEvent(e, run.header.attempt, run.byKey, lines, e.runId !== first);
  }
  return lines;
}

/** One event of one run into its lines. */
function foldEvent(e: TimedEvent, attempt: number, byKey: Map<string, StepLine>, lines: ProgressLine[], other: boolean): void {
  const stepLine = (key: string): StepLine => {
    let line = byKey.get(key);
    if (!line) {
      line = { kind: "step", runId: e.runId, attempt, key, state: "running", retry: 0 };
      byKey.set(key, line);
      lines.push(line);
    }
    return line;
  };
  switch (e.type) {
    case "step-reused": {
      const line = stepLine(e.step);
      Object.assign(line, { state: "reused", recordedBy: e.recordedBy, recordedAt: e.recordedAt });
      break;
    }
    case "step-started": {
      const line = stepLine(e.step);
      line.state = "running";
      line.retry = e.retry;
      delete line.error;
      if (e.at !== undefined) line.startedAt = line.startedAt ?? e.at;
      break;
    }
    case "step-succeeded": {
      const line = stepLine(e.step);
      line.state = "succeeded";
      line.durationMs = e.durationMs;
      break;
    }
    case "step-failed": {
      const line = stepLine(e.step);
      line.state = "failed";
      line.error = e.error;
      if (line.startedAt !== undefined && e.at !== undefined) line.durationMs = e.at - line.startedAt;
      break;
    }
    case "step-resolved": {
      const line = stepLine(e.step);
      line.resolution = { policy: e.policy, found: e.found };
      // A query that found the effect done, a supplied value, a saga's compensation: settled
      // without running. A re-drive or a compensate-then-rerun is followed by step-started.
      if (e.policy === "query" && e.found === "done") line.state = "resolved";
      else if (e.policy === "supplied") line.state = "resolved";
      else if (e.policy === "compensate" && e.found === "saga") line.state = "compensated";
      break;
    }
    case "attempt-ended":
      // A step still "running" when its attempt ended was cut off with it.
      for (const line of byKey.values()) {
        if (line.state === "running") {
          line.state = "failed";
          if (!line.error && e.error && (e.error.step === undefined || e.error.step === line.key)) line.error = e.error;
        }
      }
      lines.push({
        kind: "end",
        runId: e.runId,
        other,
        attempt: e.attempt,
        status: e.status,
        runStatus: e.runStatus,
        ...(e.error ? { error: e.error } : {}),
      });
      break;
  }
}

export function isFinal(line: ProgressLine): boolean {
  return line.kind !== "step" || line.state !== "running";
}

export interface RenderOptions {
  /** Now, in ms: for the age of reused records and the time a running step has taken. */
  now: number;
  color?: boolean;
  /** A spinner frame index for running steps (a terminal); without it they show "…". */
  frame?: number;
  /** Cut each line to this many columns. */
  width?: number;
}

const STATUS_STYLE: Record<string, "green" | "red" | "yellow" | "cyan" | "magenta"> = {
  completed: "green",
  compensated: "magenta",
  waiting: "cyan",
  escalated: "yellow",
};

/** The lines of the progress view, as text. Pure: the same events and options give the same lines. */
export function renderProgress(events: readonly TimedEvent[], options: RenderOptions): string[] {
  return progressModel(events).map((line) => renderLine(line, options));
}

export function renderLine(line: ProgressLine, options: RenderOptions): string {
  const paint = painter(options.color === true);
  const text = renderUncut(line, options, paint);
  if (options.width === undefined) return text;
  return stripAnsi(text).length > options.width ? truncate(stripAnsi(text), options.width) : text;
}

function renderUncut(line: ProgressLine, options: RenderOptions, paint: Paint): string {
  if (line.kind === "attempt") {
    const from = line.fromStep === undefined ? "" : `, redoing from step ${safe(line.fromStep)}`;
    return (
      paint("bold", `Run ${safe(line.runId)}`) + paint("gray", ` · ${safe(line.workflow)} · attempt ${line.attempt}${from}${line.resumed ? " (goes on)" : ""}`)
    );
  }
  if (line.kind === "end") {
    const style = STATUS_STYLE[line.status] ?? "red";
    const runNote = line.runStatus !== line.status ? ` (the run is now ${line.runStatus})` : "";
    const why = line.error ? `: ${oneLine(line.error.message)}` : "";
    const run = line.other ? `run ${safe(line.runId)} ` : "";
    return (
      paint(style, `${endGlyph(line.status)} ${run}attempt ${line.attempt} ${line.status}`) + runNote + (line.status === "completed" ? "" : paint("gray", why))
    );
  }
  // Keys are padded so the notes line up for the usual short step names.
  const key = safe(line.key).padEnd(KEY_WIDTH);
  const gray = (t: string) => paint("gray", t);
  switch (line.state) {
    case "running": {
      const glyph = options.frame === undefined ? "…" : SPINNER[options.frame % SPINNER.length]!;
      const took = line.startedAt !== undefined ? ` ${formatDuration(Math.max(0, options.now - line.startedAt))}` : "";
      const retry = line.retry > 0 ? `  retry ${line.retry}` : "";
      const cut =
        line.resolution?.policy === "redrive"
          ? "  re-driving (cut off earlier)"
          : line.resolution?.policy === "compensate"
            ? "  compensated, running again"
            : "";
      return `  ${paint("yellow", glyph)} ${key}${gray(took + retry + cut)}`.trimEnd();
    }
    case "succeeded": {
      const retry = line.retry > 0 ? `, ${line.retry + 1} calls` : "";
      const cut =
        line.resolution?.policy === "redrive" ? ", re-driven (cut off earlier)" : line.resolution?.policy === "compensate" ? ", compensated and run again" : "";
      return `  ${paint("green", "✓")} ${key} ${gray(formatDuration(line.durationMs ?? 0) + retry + cut)}`;
    }
    case "failed": {
      const took = line.durationMs !== undefined ? `${formatDuration(line.durationMs)}  ` : "";
      const why = line.error ? `${errorLabel(line.error)}` : "cut off";
      return `  ${paint("red", "✗")} ${key} ${gray(took)}${paint("red", why)}`;
    }
    case "reused": {
      const age = line.recordedAt !== undefined && options.now - line.recordedAt > HOUR_MS ? `, ${formatAge(line.recordedAt, options.now)}` : "";
      return `  ${paint("cyan", "↺")} ${key} ${gray(`reused from attempt ${line.recordedBy ?? "?"}${age}`)}`;
    }
    case "resolved": {
      const how = line.resolution?.policy === "supplied" ? "value given on continue" : "found done by its query, not run again";
      return `  ${paint("green", "✓")} ${key} ${gray(how)}`;
    }
    case "compensated":
      return `  ${paint("magenta", "↶")} ${key} ${gray("compensated")}`;
  }
}

function endGlyph(status: string): string {
  if (status === "completed") return "✓";
  if (status === "waiting") return "⏸";
  if (status === "escalated") return "⚠";
  if (status === "compensated") return "↶";
  return "✗";
}

function errorLabel(error: ErrorInfo): string {
  const code = error.code ? `${error.code}: ` : error.name && error.name !== "Error" ? `${safe(error.name)}: ` : "";
  return code + oneLine(error.message);
}

function oneLine(text: string): string {
  return truncate(safe(text.split("\n")[0] ?? ""), 160);
}

/**
 * Prints the view as events arrive. On a TTY: the finished prefix of the lines is printed once,
 * the rest (running steps) is redrawn in place with a spinner. Elsewhere: each line is printed
 * once, in order, when it and every line before it are final.
 */
export class LiveProgress {
  readonly events: TimedEvent[] = [];
  #printed = 0;
  #liveRows = 0;
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly out: Output,
    private readonly options: { tty: boolean; color: boolean; now: () => number },
  ) {}

  onEvent = (event: ProgressEvent): void => {
    if (this.#closed) return;
    this.events.push({ ...event, at: this.options.now() });
    this.#draw();
    if (this.options.tty && !this.#timer && this.#hasRunning()) {
      this.#timer = setInterval(() => {
        this.#frame++;
        this.#draw();
      }, 80);
      this.#timer.unref();
    }
  };

  #hasRunning(): boolean {
    return progressModel(this.events).some((l) => !isFinal(l));
  }

  #draw(force = false): void {
    const model = progressModel(this.events);
    let finalPrefix = 0;
    while (finalPrefix < model.length && (force || isFinal(model[finalPrefix]!))) finalPrefix++;
    const width = this.options.tty ? Math.max(20, (this.out.columns || 80) - 1) : undefined;
    const render = (line: ProgressLine) =>
      renderLine(line, {
        now: this.options.now(),
        color: this.options.color,
        ...(this.options.tty ? { frame: this.#frame } : {}),
        ...(width ? { width } : {}),
      });
    let text = "";
    if (this.options.tty && this.#liveRows > 0) text += `\x1b[${this.#liveRows}A\r\x1b[J`;
    for (let i = this.#printed; i < finalPrefix; i++) text += render(model[i]!) + "\n";
    this.#printed = Math.max(this.#printed, finalPrefix);
    this.#liveRows = 0;
    if (this.options.tty) {
      for (let i = finalPrefix; i < model.length; i++) {
        text += render(model[i]!) + "\n";
        this.#liveRows++;
      }
    }
    if (text) this.out.write(text);
    if (this.#timer && !this.#hasRunning()) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** Write something else (a message on stderr) without breaking the live rows: erase them, write, redraw. */
  aside(write: () => void): void {
    if (this.options.tty && this.#liveRows > 0 && !this.#closed) {
      this.out.write(`\x1b[${this.#liveRows}A\r\x1b[J`);
      this.#liveRows = 0;
      write();
      this.#draw();
    } else write();
  }

  /** Print whatever is left (steps still shown as running are printed as they stand) and stop. */
  finish(): void {
    if (this.#closed) return;
    this.#draw(true);
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
