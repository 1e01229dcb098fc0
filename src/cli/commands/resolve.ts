/** steplog resolve <id> <step> --value JSON | --redo [--by NAME]. */

import { booleanOption, jsonArgument, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT, UsageError } from "../exit.js";
import { command, safe } from "../format.js";

export const resolve: Command = {
  help: {
    name: "resolve",
    summary: "answer an escalated step: it happened (--value JSON) or it did not (--redo)",
    usage: ["steplog resolve <id> <step> --value JSON [--by NAME]", "steplog resolve <id> <step> --redo [--by NAME]"],
    description: [
      "--value JSON: the effect happened and this is what the step would have returned; the next continue reuses it (checked by the step's result schema then) and goes on after the step. --redo: it did not happen; the next continue runs the step again with the same idempotency key. Runs nothing itself; when no step of the run is escalated any more the run reads ready.",
    ],
    options: {
      value: { type: "string", value: "JSON", description: 'The step\'s value, as JSON: \'{"id":"ch_1"}\', 42, \'"text"\'.' },
      redo: { type: "boolean", description: "The effect did not happen: run the step again on continue." },
      by: { type: "string", value: "NAME", description: "Who answered (recorded with the answer)." },
    },
    positionals: { min: 2, max: 2, names: ["<id>", "<step>"] },
    examples: [`steplog resolve 212 charge --value '{"id":"ch_1"}' --by ana`, "steplog resolve 212 charge --redo"],
  },
  async run(session, parsed) {
    const [id, step] = parsed.positionals as [string, string];
    const valueText = stringOption(parsed, "value");
    const redo = booleanOption(parsed, "redo");
    const by = stringOption(parsed, "by");
    if ((valueText === undefined) === !redo) throw new UsageError("steplog resolve: give exactly one of --value JSON (it happened) or --redo (it did not).");
    const answer = redo ? { redo: true as const } : { value: jsonArgument(valueText!, "--value", "resolve") };
    const engine = await session.engine();
    await engine.resolve(id, step, { ...answer, ...(by !== undefined ? { by } : {}) });
    const view = await engine.get(id);
    const next = view.status === "ready" ? [command("steplog", "run", "--continue", "--id", id)] : [command("steplog", "escalations")];
    if (session.json) session.printJson({ id, step, answer: redo ? "redo" : "value", runStatus: view.status, next });
    else {
      session.out(
        `${session.paint("green", "✓")} step ${safe(step)} of run ${safe(id)} resolved: ${redo ? "redo it" : "it happened"}. The run is ${view.status}.`,
      );
      session.out(`next: ${session.paint("cyan", next[0]!)}`);
    }
    return EXIT.ok;
  },
};
