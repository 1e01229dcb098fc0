/**
 * Running one attempt from the command line (run, compensate): live progress while it runs,
 * Ctrl-C handling, then the ending, the value or error, the run's cost and the next commands.
 */

import type { RunResult } from "../steps/attempt.js";
import type { Engine } from "../engine/engine.js";
import type { ProgressEvent } from "../steps/attempt-settings.js";
import type { RunView } from "../operations/views.js";
import { errorText } from "./describe.js";
import { EXIT, type ExitCode } from "./exit.js";
import { command, formatUsage, oneLineJson, safe } from "./format.js";
import { LiveProgress, progressModel, type StepLine } from "./progress.js";
import type { Session } from "./session.js";
import { guardSignals } from "./signals.js";
import { nextCommands } from "./timeline.js";

export interface Attended {
  result: RunResult;
  /** The signal that cancelled it, if Ctrl-C did. */
  interruptedBy: NodeJS.Signals | undefined;
  events: ProgressEvent[];
}

/** Progress and signal handling around one attempt; `go` gets the listener and the signal. */
export async function attend(
  session: Session,
  what: string,
  go: (hooks: { onProgress: (event: ProgressEvent) => void; signal: AbortSignal }) => Promise<RunResult>,
): Promise<Attended> {
  const controller = new AbortController();
  const live = new LiveProgress(session.io.stdout, { tty: session.tty, color: session.color, now: () => session.now() });
  const events: ProgressEvent[] = [];
  const onProgress = (event: ProgressEvent) => {
    events.push(event);
    if (!session.json) live.onEvent(event);
  };
  const guard = guardSignals(controller, (text) => live.aside(() => session.err(text)), what);
  try {
    const result = await go({ onProgress, signal: controller.signal });
    return { result, interruptedBy: guard.received, events };
  } finally {
    if (!session.json) live.finish();
    guard.remove();
  }
}

/** The exit code for how an attempt ended. */
export function exitFor(attended: Attended, success: string = "completed"): ExitCode {
  if (attended.interruptedBy && attended.result.status === "cancelled") return EXIT.interrupted;
  return attended.result.status === success ? EXIT.ok : EXIT.notCompleted;
}

/** After the attempt: the summary lines (text) or the JSON document. */
export async function report(session: Session, engine: Engine, attended: Attended): Promise<void> {
  let view: RunView | undefined;
  try {
    view = await engine.get(attended.result.id, { redact: true });
  } catch {
    view = undefined;
  }
  // The value printed is the redacted one, like everything else the command shows.
  const result = view && "value" in attended.result ? { ...attended.result, value: view.value } : attended.result;
  const escalations = view?.status === "escalated" ? (await engine.escalations().catch(() => [])).filter((e) => e.runId === result.id) : [];
  const next = view ? [...nextCommands(view, escalations), command("steplog", "show", result.id)] : [command("steplog", "show", result.id)];
  if (session.json) {
    const steps = progressModel(attended.events)
      .filter((l): l is StepLine => l.kind === "step" && l.runId === result.id && l.attempt === result.attempt)
      .map((l) => ({
        key: l.key,
        state: l.state,
        ...(l.durationMs !== undefined ? { durationMs: l.durationMs } : {}),
        ...(l.recordedBy !== undefined ? { recordedBy: l.recordedBy, recordedAt: new Date(l.recordedAt!).toISOString() } : {}),
        ...(l.error ? { error: l.error } : {}),
        ...(l.resolution ? { resolution: l.resolution } : {}),
        ...(l.retry ? { retries: l.retry } : {}),
      }));
    session.printJson({
      ...result,
      ...(attended.interruptedBy ? { interruptedBy: attended.interruptedBy } : {}),
      ...(view ? { workflow: view.workflow, source: view.source, usage: view.usage } : {}),
      steps,
      next,
    });
    return;
  }
  const paint = session.paint;
  const lines: string[] = [];
  if (result.status === "completed") lines.push(`${paint("bold", "Value")}  ${oneLineJson(result.value, 400)}`);
  else if (result.error && result.status !== "escalated") lines.push(`${paint("bold", "Error")}  ${paint("red", safe(errorText(result.error)).slice(0, 600))}`);
  if (result.waitingFor) {
    const w = result.waitingFor;
    lines.push(
      `${paint("bold", "Waits")}  for ${w.kind === "event" ? `event ${safe(JSON.stringify(w.event))}` : w.kind === "sleep" ? `its timer (${w.until !== undefined ? new Date(w.until).toISOString() : "?"})` : w.kind === "child" ? `child run ${safe(w.child ?? "?")}` : w.kind === "turn" ? "its turn (a concurrency or rate limit)" : `approval of step ${safe(w.step)}`}; the process may exit`,
    );
  }
  const cost = formatUsage(view?.usage);
  if (cost) lines.push(`${paint("bold", "Cost")}   ${cost} ${paint("gray", "(the run so far)")}`);
  lines.push(`${paint("bold", "Next")}   ${paint("cyan", next[0]!)}`);
  for (const more of next.slice(1)) lines.push(`       ${paint("cyan", more)}`);
  session.lines(lines);
}
