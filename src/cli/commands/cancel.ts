/** steplog cancel <id> [--reason TEXT] [--children]. */

import { booleanOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe } from "../format.js";

export const cancel: Command = {
  help: {
    name: "cancel",
    summary: "cancel a run: a parked run stops waiting, a run held by another process is fenced out",
    usage: ["steplog cancel <id> [--reason TEXT] [--children]"],
    description: [
      "Marks the run cancelled. If another process is running an attempt of it, that attempt can record nothing more (it ends LEASE_LOST at its next write). A parked run stops waiting. Records are kept: `steplog run --continue --id ID` goes on later. A completed run is refused (RUN_COMPLETED).",
    ],
    options: {
      reason: { type: "string", value: "TEXT", description: "Why (recorded in the run's error). Default: cancelled by request." },
      children: { type: "boolean", description: "Cancel the run's child runs that have not ended too, and theirs." },
    },
    positionals: { min: 1, max: 1, names: ["<id>"] },
  },
  async run(session, parsed) {
    const id = parsed.positionals[0]!;
    const reason = stringOption(parsed, "reason");
    const engine = await session.engine();
    const children = booleanOption(parsed, "children");
    const status = await engine.cancel(id, { ...(reason !== undefined ? { reason } : {}), ...(children ? { children } : {}) });
    const next = command("steplog", "run", "--continue", "--id", id);
    if (session.json) session.printJson({ id, runStatus: status, next });
    else {
      session.out(`${session.paint("yellow", "■")} run ${safe(id)} is ${status}.`);
      session.out(`to go on later: ${session.paint("cyan", next)}`);
    }
    return EXIT.ok;
  },
};
