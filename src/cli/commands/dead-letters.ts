/** steplog dead-letters: runs that used up their attempts. */

import { integerOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe, truncate } from "../format.js";
import { printRunLines, runLines } from "./runs.js";

export const deadLetters: Command = {
  help: {
    name: "dead-letters",
    summary: "runs that used up their attempts (maxAttempts), with how each last failed",
    usage: ["steplog dead-letters [--workflow NAME] [--json]"],
    description: ["A dead-lettered run is refused by a plain continue. Fix the cause, then give it a fresh budget: `steplog run --continue --id ID --force`."],
    options: {
      workflow: { type: "string", value: "NAME", description: "Only runs of this workflow." },
      limit: { type: "string", value: "N", description: "At most N runs (default 50; 0 for all)." },
    },
    positionals: { min: 0, max: 0, names: [] },
  },
  async run(session, parsed) {
    const workflow = stringOption(parsed, "workflow");
    const limit = integerOption(parsed, "limit", "dead-letters", 0) ?? 50;
    const { lines, errors, more } = await session.read(async (engine) => {
      const all = await engine.list({ status: "dead-lettered", ...(workflow !== undefined ? { workflow } : {}), ...(limit > 0 ? { limit: limit + 1 } : {}) });
      const shown = limit > 0 ? all.slice(0, limit) : all;
      const lines = await runLines(engine, shown);
      const errors = new Map<string, string>();
      for (const l of lines) {
        const view = await engine.get(l.id, { redact: true }).catch(() => undefined);
        if (view?.error) errors.set(l.id, view.error.message);
      }
      return { lines, errors, more: all.length > shown.length };
    });
    if (session.json) {
      session.printJson(lines.map((l) => ({ ...l, error: errors.get(l.id) ?? null, next: command("steplog", "run", "--continue", "--id", l.id, "--force") })));
      return EXIT.ok;
    }
    printRunLines(session, lines, more, limit, "dead-lettered runs");
    for (const l of lines) {
      const error = errors.get(l.id);
      if (error) session.out(`${session.paint("gray", `${safe(l.id)}:`)} ${session.paint("red", truncate(safe(error.split("\n")[0] ?? ""), 200))}`);
    }
    if (lines.length)
      session.out(
        `${session.paint("gray", "to retry one with a fresh budget:")} ${session.paint("cyan", command("steplog", "run", "--continue", "--id", lines[0]!.id, "--force"))}`,
      );
    return EXIT.ok;
  },
};
