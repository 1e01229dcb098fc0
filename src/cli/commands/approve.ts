/** steplog approve <id> <step> [--by NAME] and steplog reject <id> <step> [--by NAME] [--reason TEXT]. */

import { stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe } from "../format.js";

export const approve: Command = {
  help: {
    name: "approve",
    summary: "approve a step the run is parked on (approval: true); a worker then goes on",
    usage: ["steplog approve <id> <step> [--by NAME] [--input-digest DIGEST]"],
    description: [
      "The run must wait for approval of that step (see steplog approvals). The approval is recorded, with the digest of the input waiting (a step given an input is approved for that input only: a continue that reaches it with another parks it for a new approval); `steplog work` (or a worker in your app) picks the run up, or continue it yourself with `steplog run --continue --id ID`.",
    ],
    options: {
      by: { type: "string", value: "NAME", description: "Who approved (recorded)." },
      "input-digest": {
        type: "string",
        value: "DIGEST",
        description: "Approve only the input with this digest (as steplog approvals shows it); refused with APPROVAL_STALE if the input waiting is another.",
      },
    },
    positionals: { min: 2, max: 2, names: ["<id>", "<step>"] },
  },
  async run(session, parsed) {
    const [id, step] = parsed.positionals as [string, string];
    const by = stringOption(parsed, "by");
    const inputDigest = stringOption(parsed, "input-digest");
    const engine = await session.engine();
    await engine.approve(id, step, { ...(by !== undefined ? { by } : {}), ...(inputDigest !== undefined ? { inputDigest } : {}) });
    const next = [command("steplog", "work"), command("steplog", "run", "--continue", "--id", id)];
    if (session.json)
      session.printJson({ id, step, approved: true, ...(by !== undefined ? { by } : {}), ...(inputDigest !== undefined ? { inputDigest } : {}), next });
    else {
      session.out(`${session.paint("green", "✓")} step ${safe(step)} of run ${safe(id)} approved${by ? ` by ${safe(by)}` : ""}.`);
      session.out(`next: ${session.paint("cyan", next[0]!)}  ${session.paint("gray", "or")}  ${session.paint("cyan", next[1]!)}`);
    }
    return EXIT.ok;
  },
};

export const reject: Command = {
  help: {
    name: "reject",
    summary: "reject a step the run is parked on; the run ends stopped with the reason",
    usage: ["steplog reject <id> <step> [--by NAME] [--reason TEXT]"],
    description: ["The run must wait for approval of that step. It ends stopped; a later continue asks for approval again."],
    options: {
      by: { type: "string", value: "NAME", description: "Who rejected (recorded)." },
      reason: { type: "string", value: "TEXT", description: "Why (recorded in the run's error)." },
    },
    positionals: { min: 2, max: 2, names: ["<id>", "<step>"] },
  },
  async run(session, parsed) {
    const [id, step] = parsed.positionals as [string, string];
    const by = stringOption(parsed, "by");
    const reason = stringOption(parsed, "reason");
    const engine = await session.engine();
    await engine.reject(id, step, { ...(by !== undefined ? { by } : {}), ...(reason !== undefined ? { reason } : {}) });
    const view = await engine.get(id);
    if (session.json)
      session.printJson({
        id,
        step,
        approved: false,
        ...(by !== undefined ? { by } : {}),
        ...(reason !== undefined ? { reason } : {}),
        runStatus: view.status,
      });
    else
      session.out(`${session.paint("yellow", "■")} step ${safe(step)} of run ${safe(id)} rejected${by ? ` by ${safe(by)}` : ""}; the run is ${view.status}.`);
    return EXIT.ok;
  },
};
