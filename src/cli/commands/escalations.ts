/** steplog escalations: the steps waiting for a person. */

import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { columns, command, formatAge, oneLineJson, safe } from "../format.js";

export const escalations: Command = {
  help: {
    name: "escalations",
    summary: "the human queue: steps cut off inside an effect that must not be repeated blindly",
    usage: ["steplog escalations [--json]"],
    description: [
      "Each entry is a step (usually irreversible) whose process died after its intent was recorded and before its outcome was: nobody knows whether its effect happened. Find out (the idempotency key is what the service saw), then answer with `steplog resolve ID STEP --value JSON` (it happened; this is what it returned) or `--redo` (it did not; run it again with the same key). When no step of the run waits any more, the run reads ready and `steplog run --continue --id ID` goes on.",
    ],
    options: {},
    positionals: { min: 0, max: 0, names: [] },
  },
  async run(session) {
    const list = await session.read((engine) => engine.escalations({ redact: true }));
    if (session.json) {
      session.printJson(
        list.map((e) => ({
          ...e,
          next: [command("steplog", "resolve", e.runId, e.step, "--value", "<json>"), command("steplog", "resolve", e.runId, e.step, "--redo")],
        })),
      );
      return EXIT.ok;
    }
    if (list.length === 0) {
      session.out(session.paint("gray", `No step waits for a person in ${session.describeStore()}.`));
      return EXIT.ok;
    }
    const now = session.now();
    for (const e of list) {
      session.out(
        `${session.paint("yellow", "⚠")} ${session.paint("bold", `${safe(e.runId)} · ${safe(e.step)}`)} ${session.paint("gray", `(${safe(e.workflow)}, ${e.effect})`)}`,
      );
      session.lines(
        columns([
          ["  cut off", `attempt ${e.attempt}, ${formatAge(Date.parse(e.cutOffAt), now)}`],
          ["  key", safe(e.idempotencyKey)],
          ["  what", safe(e.summary)],
          ...("input" in e ? [["  input", safe(oneLineJson(e.input, 100))]] : []),
          ["  if it happened", session.paint("cyan", command("steplog", "resolve", e.runId, e.step, "--value", "<json>"))],
          ["  if it did not", session.paint("cyan", command("steplog", "resolve", e.runId, e.step, "--redo"))],
        ]),
      );
    }
    return EXIT.ok;
  },
};
