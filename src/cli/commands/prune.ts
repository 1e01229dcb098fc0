/** steplog prune --older-than 30d [--status S[,S…]] [--workflow NAME] [--dry-run]: delete ended runs (engine.prune). */

import { booleanOption, durationOption, listOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT, UsageError } from "../exit.js";
import { command, safe } from "../format.js";
import { storeArgs } from "./import.js";
import { DEFAULT_PRUNE_STATUSES, PRUNE_STATUSES, type PruneStatus } from "../../engine/prune-options.js";

export const prune: Command = {
  help: {
    name: "prune",
    summary: "delete runs that ended long ago, with every row they own (a run and its child runs together)",
    usage: ["steplog prune --older-than <duration> [--status S[,S…]] [--workflow NAME] [--dry-run] [--json]"],
    description: [
      "Deletes the runs that ended more than --older-than ago (30d, 12h, 1h30m), with their attempts, steps and events, in small batches: workers writing meanwhile wait at most for one. A run goes with its child runs, and a child run only with its parent. A run that has not ended is never deleted.",
      `Without --status: ${DEFAULT_PRUNE_STATUSES.join(", ")}. A dead-lettered run, or one with an open escalation, is deleted only when --status names dead-lettered or escalated. Statuses: ${PRUNE_STATUSES.join(", ")}.`,
      "--dry-run counts what would go and deletes nothing. A SQLite file keeps its size (its pages are reused, the values overwritten): docs/stores.md says how to give the space back.",
    ],
    options: {
      "older-than": { type: "string", value: "DURATION", description: "Runs that ended more than this long ago (30d, 12h, 1h30m). Required." },
      status: { type: "string", multiple: true, value: "S", description: "Only runs with this status; repeat or separate with commas." },
      workflow: { type: "string", value: "NAME", description: "Only runs of this workflow (their child runs go with them)." },
      "dry-run": { type: "boolean", description: "Count what would be deleted; delete nothing." },
    },
    positionals: { min: 0, max: 0, names: [] },
    examples: [
      "steplog prune --older-than 30d --dry-run",
      "steplog prune --older-than 90d --status failed,cancelled",
      "steplog prune --older-than 7d --workflow nightly-report --json",
    ],
  },
  async run(session, parsed) {
    const olderThan = durationOption(parsed, "older-than", "prune");
    if (olderThan === undefined)
      throw new UsageError(
        "steplog prune: --older-than is required: how long ago a run must have ended to be deleted.",
        "For example: steplog prune --older-than 30d --dry-run",
      );
    const status = pruneStatuses(listOption(parsed, "status"));
    const workflow = stringOption(parsed, "workflow");
    const dryRun = booleanOption(parsed, "dry-run");
    const endedBefore = session.now() - olderThan;
    const options = { endedBefore, ...(status ? { status } : {}), ...(workflow !== undefined ? { workflow } : {}), dryRun };
    const result = dryRun
      ? await session.read((engine) => engine.prune(options))
      : await (async () => {
          const engine = await session.engine();
          session.requireStore();
          return engine.prune(options);
        })();
    const cutOff = new Date(endedBefore).toISOString();
    const again = command(
      "steplog",
      "prune",
      "--older-than",
      stringOption(parsed, "older-than")!,
      ...(status ? ["--status", status.join(",")] : []),
      ...(workflow !== undefined ? ["--workflow", workflow] : []),
      ...storeArgs(parsed),
    );
    if (session.json) {
      session.printJson({ ...result, endedBefore: cutOff, store: session.describeStore(), ...(dryRun && result.runs > 0 ? { next: again } : {}) });
      return EXIT.ok;
    }
    const rows = `${plural(result.runs, "run")} (${plural(result.attempts, "attempt")}, ${plural(result.steps, "step")}, ${plural(result.events, "event")})`;
    if (dryRun) {
      session.out(`Would delete ${rows} that ended before ${cutOff} from ${safe(session.describeStore())}; nothing was deleted.`);
      if (result.runs > 0) session.out(`to delete them: ${session.paint("cyan", again)}`);
    } else {
      session.out(`${session.paint("green", "✓")} deleted ${rows} that ended before ${cutOff} from ${safe(session.describeStore())}.`);
    }
    return EXIT.ok;
  },
};

function pruneStatuses(given: string[]): PruneStatus[] | undefined {
  const statuses = given
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
  if (statuses.length === 0) return undefined;
  for (const s of statuses) {
    if (!(PRUNE_STATUSES as readonly string[]).includes(s))
      throw new UsageError(
        `steplog prune: ${JSON.stringify(s)} is not a status a run is pruned in (a run that has not ended is never pruned).`,
        `Statuses: ${PRUNE_STATUSES.join(", ")}.`,
      );
  }
  return statuses as PruneStatus[];
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
