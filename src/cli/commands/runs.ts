/** steplog runs [--status S] [--workflow W] [--limit N]: one line a run. */

import type { Engine } from "../../engine/engine.js";
import type { RunStatus } from "../../store/types.js";
import type { RunSummary, RunView } from "../../operations/views.js";
import { integerOption, listOption, stringOption, type Parsed } from "../args.js";
import type { Command } from "../command.js";
import { EXIT, UsageError } from "../exit.js";
import { columns, formatAge, safe, truncate, type Paint, type Style } from "../format.js";
import type { Session } from "../session.js";

export const RUN_STATUSES: RunStatus[] = [
  "running",
  "interrupted",
  "waiting",
  "ready",
  "escalated",
  "failed",
  "stopped",
  "timed-out",
  "cancelled",
  "dead-lettered",
  "completed",
  "compensated",
];

export interface RunLine {
  id: string;
  workflow: string;
  version: string | null;
  status: RunStatus;
  attempts: number;
  /** The step the run is in (running) or last recorded, with that row's status. */
  step: { key: string; status: string; attempt: number } | null;
  createdAt: string;
  updatedAt: string;
  source: string | null;
  usage: Record<string, number>;
}

export function statusFilter(parsed: Parsed, command: string): RunStatus[] | undefined {
  const given = listOption(parsed, "status")
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
  if (given.length === 0) return undefined;
  for (const s of given) {
    if (!(RUN_STATUSES as string[]).includes(s))
      throw new UsageError(`steplog ${command}: unknown status ${JSON.stringify(s)}.`, `Statuses: ${RUN_STATUSES.join(", ")}.`);
  }
  return given as RunStatus[];
}

export async function runLines(engine: Engine, runs: RunSummary[]): Promise<RunLine[]> {
  const lines: RunLine[] = [];
  for (const summary of runs) {
    let view: RunView | undefined;
    try {
      view = await engine.get(summary.id, { redact: true });
    } catch {
      view = undefined; // removed meanwhile
    }
    const last = view?.steps.at(-1);
    lines.push({
      id: summary.id,
      workflow: summary.workflow,
      version: summary.version,
      status: view?.status ?? summary.status,
      attempts: summary.attemptCount,
      step: last ? { key: last.key, status: last.status, attempt: last.attempt } : null,
      createdAt: summary.createdAt,
      updatedAt: summary.updatedAt,
      source: view?.source ?? null,
      usage: view?.usage ?? {},
    });
  }
  return lines;
}

export const STATUS_STYLE: Record<string, Style> = {
  completed: "green",
  running: "blue",
  waiting: "cyan",
  ready: "cyan",
  escalated: "yellow",
  stopped: "yellow",
  compensated: "magenta",
};

export function renderRunLines(lines: RunLine[], paint: Paint, now: number): string[] {
  const rows: string[][] = [["ID", "WORKFLOW", "STATUS", "ATTEMPTS", "STEP", "AGE"].map((h) => paint("gray", h))];
  for (const l of lines) {
    const step = l.step ? `${truncate(safe(l.step.key), 32)}${l.step.status === "succeeded" ? "" : paint("gray", ` (${l.step.status})`)}` : paint("gray", "-");
    rows.push([
      safe(l.id),
      truncate(safe(l.workflow), 32),
      paint(STATUS_STYLE[l.status] ?? "red", l.status),
      String(l.attempts),
      step,
      formatAge(Date.parse(l.createdAt), now).replace(/ ago$/, ""),
    ]);
  }
  return columns(rows);
}

export const runs: Command = {
  help: {
    name: "runs",
    summary: "list runs, newest first: id, workflow, status, attempts, current or last step, age",
    usage: ["steplog runs [--status S[,S…]] [--workflow NAME] [--limit N] [--json]"],
    description: [
      "One line a run. STEP is the step the run is in (running) or the last one recorded, with its status when it did not succeed. AGE is the time since the run started. An interrupted run (its process is gone) reads interrupted without `steplog recover`.",
      `Statuses: ${RUN_STATUSES.join(", ")}.`,
    ],
    options: {
      status: { type: "string", multiple: true, value: "S", description: "Only runs with this status; repeat or separate with commas." },
      workflow: { type: "string", value: "NAME", description: "Only runs of this workflow (its name, not a file)." },
      limit: { type: "string", value: "N", description: "At most N runs (default 50; 0 for all)." },
    },
    positionals: { min: 0, max: 0, names: [] },
    examples: ["steplog runs", "steplog runs --status interrupted,failed", "steplog runs --workflow fix-issue --json"],
  },
  async run(session, parsed) {
    const status = statusFilter(parsed, "runs");
    const workflow = stringOption(parsed, "workflow");
    const limit = integerOption(parsed, "limit", "runs", 0) ?? 50;
    const { lines, more } = await session.read(async (engine) => {
      const all = await engine.list({
        ...(status ? { status } : {}),
        ...(workflow !== undefined ? { workflow } : {}),
        ...(limit > 0 ? { limit: limit + 1 } : {}),
      });
      const shown = limit > 0 ? all.slice(0, limit) : all;
      return { lines: await runLines(engine, shown), more: all.length > shown.length };
    });
    printRunLines(session, lines, more, limit, "runs");
    return EXIT.ok;
  },
};

export function printRunLines(session: Session, lines: RunLine[], more: boolean, limit: number, what: string): void {
  if (session.json) {
    session.printJson(lines);
    return;
  }
  if (lines.length === 0) {
    session.out(session.paint("gray", `No ${what} in ${session.describeStore()}.`));
    return;
  }
  session.lines(renderRunLines(lines, session.paint, session.now()));
  if (more) session.out(session.paint("gray", `(more than ${limit}; --limit 0 shows all)`));
}
