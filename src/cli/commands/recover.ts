/** steplog recover: find runs whose process is gone and mark them interrupted. Runs nothing. */

import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe } from "../format.js";

export const recover: Command = {
  help: {
    name: "recover",
    summary: "mark runs whose process is gone as interrupted (runs nothing), and say how to continue each",
    usage: ["steplog recover [--json]"],
    description: [
      "Finds runs whose attempt has no ending and whose owner is gone (same host and the pid is dead or reused, or another host and the lease expired), marks each interrupted, fences the dead owner out, and lists them with the step each was in. It re-runs nothing. You don't need it before a continue: `steplog runs` already shows such runs as interrupted.",
    ],
    options: {},
    positionals: { min: 0, max: 0, names: [] },
  },
  async run(session) {
    const engine = await session.engine();
    session.requireStore();
    const found = await engine.recover();
    if (session.json) {
      session.printJson(found.map((r) => ({ ...r, next: command("steplog", "run", "--continue", "--id", r.id) })));
      return EXIT.ok;
    }
    if (found.length === 0) {
      session.out(session.paint("gray", `No interrupted runs to mark in ${session.describeStore()}.`));
      return EXIT.ok;
    }
    for (const r of found) {
      session.out(
        `${session.paint("yellow", "interrupted")} ${session.paint("bold", safe(r.id))} · ${safe(r.workflow)} · attempt ${r.attempt}${r.step ? ` · in step ${safe(r.step)}` : ""}`,
      );
      session.out(`  ${session.paint("gray", safe(r.explanation.replace(/ To go on, type engine\.continue\([^)]*\)\.$/, "")))}`);
      session.out(`  next: ${session.paint("cyan", command("steplog", "run", "--continue", "--id", r.id))}`);
    }
    return EXIT.ok;
  },
};
