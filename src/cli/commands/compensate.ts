/** steplog compensate <id> [--workflow FILE]: the saga, with the workflow loaded from the recorded source. */

import type { Engine } from "../../engine/engine.js";
import { stringOption } from "../args.js";
import { attend, exitFor, report } from "../attempt-view.js";
import type { Command } from "../command.js";
import { loadRunWorkflow } from "./workflow-of.js";

export const compensate: Command = {
  help: {
    name: "compensate",
    summary: "undo a run instead of going on: run the compensate of every succeeded compensatable step, newest first",
    usage: ["steplog compensate <id> [--workflow FILE]"],
    description: [
      "Replays the workflow from its records (no step function is called) and runs the compensate function of each compensatable step that succeeded, newest first, each recorded as a row of its own. Refused with PAST_PIVOT once an irreversible step has succeeded. The workflow is loaded from the source recorded when the run started, or from --workflow FILE.",
      "Exit 0 when the run ends compensated, 1 when the saga failed (run it again: a compensation already done is not repeated).",
    ],
    options: { workflow: { type: "string", value: "FILE", description: "The workflow file, when the run has no recorded source." } },
    positionals: { min: 1, max: 1, names: ["<id>"] },
  },
  async run(session, parsed) {
    const id = parsed.positionals[0]!;
    const loaded = await loadRunWorkflow(session, id, stringOption(parsed, "workflow"));
    let engine: Engine | undefined;
    const attended = await attend(session, `the saga of run ${JSON.stringify(id)}`, async ({ onProgress }) => {
      engine = await session.engine({ workflows: [loaded.workflow], onProgress });
      return engine.compensate(id);
    });
    await report(session, engine!, attended);
    return exitFor(attended, "compensated");
  },
};
