/** steplog send <id> <event> [JSON] [--keep] [--key K]. */

import { booleanOption, jsonArgument, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { command, safe } from "../format.js";

export const send: Command = {
  help: {
    name: "send",
    summary: "send an event (with a JSON payload) to a run waiting for it",
    usage: ["steplog send <id> <event> [JSON] [--keep] [--key K]"],
    description: [
      "Records the event for a run parked in ctx.waitForEvent(event). The payload is JSON (default null). Refused with NOT_WAITING when the run does not wait for that event, unless --keep keeps it for a later wait. With --key, a second send with that key changes nothing (it reports the first delivery). A worker (`steplog work`, or one in your app) then picks the run up.",
    ],
    options: {
      keep: { type: "boolean", description: "Keep the event even though the run does not wait for it now." },
      key: { type: "string", value: "KEY", description: "Send it once: a later send with this key changes nothing (a webhook's delivery id, say)." },
    },
    positionals: { min: 2, max: 3, names: ["<id>", "<event>", "[JSON]"] },
    examples: [`steplog send 212 payment '{"ok":true}'`, `steplog send 212 note '"hello"' --keep`, `steplog send 212 payment '{"ok":true}' --key evt_1Nq`],
  },
  async run(session, parsed) {
    const [id, event, json] = parsed.positionals as [string, string, string | undefined];
    const payload = json === undefined ? null : jsonArgument(json, "the payload", "send");
    const keep = booleanOption(parsed, "keep");
    const key = stringOption(parsed, "key");
    const engine = await session.engine();
    const sent = await engine.send(id, event, payload, { ...(keep ? { keep: true } : {}), ...(key === undefined ? {} : { key }) });
    const next = [command("steplog", "work"), command("steplog", "run", "--continue", "--id", id)];
    if (session.json)
      session.printJson({ id, event, payload, kept: keep, ...(key === undefined ? {} : { key, seq: sent.seq, duplicate: sent.duplicate }), next });
    else {
      if (sent.duplicate)
        session.out(
          `${session.paint("gray", "=")} already sent with key ${safe(key!)}: event ${safe(sent.event)} #${sent.seq} at ${sent.sentAt}; nothing changed.`,
        );
      else session.out(`${session.paint("green", "✓")} event ${safe(event)} sent to run ${safe(id)}.`);
      session.out(`next: ${session.paint("cyan", next[0]!)}  ${session.paint("gray", "or")}  ${session.paint("cyan", next[1]!)}`);
    }
    return EXIT.ok;
  },
};
