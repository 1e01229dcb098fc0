/** steplog send <id> <event> [JSON] [--keep]. */

import { booleanOption, jsonArgument } from "../args.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe } from "../format.js";

export const send: Command = {
  help: {
    name: "send",
    summary: "send an event (with a JSON payload) to a run waiting for it",
    usage: ["steplog send <id> <event> [JSON] [--keep]"],
    description: [
      "Records the event for a run parked in ctx.waitForEvent(event). The payload is JSON (default null). Refused with NOT_WAITING when the run does not wait for that event, unless --keep keeps it for a later wait. A worker (`steplog work`, or one in your app) then picks the run up.",
    ],
    options: { keep: { type: "boolean", description: "Keep the event even though the run does not wait for it now." } },
    positionals: { min: 2, max: 3, names: ["<id>", "<event>", "[JSON]"] },
    examples: [`steplog send 212 payment '{"ok":true}'`, `steplog send 212 note '"hello"' --keep`],
  },
  async run(session, parsed) {
    const [id, event, json] = parsed.positionals as [string, string, string | undefined];
    const payload = json === undefined ? null : jsonArgument(json, "the payload", "send");
    const keep = booleanOption(parsed, "keep");
    const engine = await session.engine();
    await engine.send(id, event, payload, keep ? { keep: true } : {});
    const next = [command("steplog", "work"), command("steplog", "run", "--continue", "--id", id)];
    if (session.json) session.printJson({ id, event, payload, kept: keep, next });
    else {
      session.out(`${session.paint("green", "✓")} event ${safe(event)} sent to run ${safe(id)}.`);
      session.out(`next: ${session.paint("cyan", next[0]!)}  ${session.paint("gray", "or")}  ${session.paint("cyan", next[1]!)}`);
    }
    return EXIT.ok;
  },
};
