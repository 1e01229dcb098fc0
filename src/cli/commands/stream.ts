/** steplog stream <id> <name> [--from N | --after SEQ] [--follow] [--json]: a run's stream (engine.readStream). */

import { booleanOption, integerOption } from "../args.js";
import { UsageError } from "../exit.js";
import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { safe, terminalJson } from "../format.js";
import { guardSignals } from "../signals.js";

export const stream: Command = {
  help: {
    name: "stream",
    summary: "print a run's stream (what ctx.stream wrote), following it live with --follow",
    usage: ["steplog stream <id> <name> [--from N | --after SEQ] [--follow] [--json]"],
    description: [
      "Prints the chunks of the run's stream <name> from offset N (default 0): a text chunk as it is, any other as one line of JSON. With --follow it goes on printing each chunk as the run writes it (from any process), until the stream is closed or the run has ended; Ctrl-C stops reading (the run goes on).",
      'When a continue redid a step that had written chunks, the chunks from an offset on were superseded: a line `[steplog: reset to offset N]` goes to stderr, then the new chunks. With --json each item is one line of JSON on stdout ({"type":"chunk","offset":0,"chunk":…,"seq":S} or {"type":"reset","offset":N,"seq":S}), ready to relay as server-sent events.',
      "Each item's seq is its place in the stream's log: --after SEQ resumes after the item with that seq, printing what followed it, a reset made meanwhile included (an SSE relay passes the Last-Event-ID it was given). Not with --from.",
    ],
    options: {
      from: { type: "string", value: "N", description: "The first offset to print (offsets count chunks from 0; inclusive)." },
      after: {
        type: "string",
        value: "SEQ",
        description: "Resume after the item with this seq (exclusive): what followed it, resets included. Not with --from.",
      },
      follow: { type: "boolean", description: "Keep printing chunks as they are written until the stream is closed or the run ends." },
    },
    positionals: { min: 2, max: 2, names: ["<id>", "<name>"] },
    examples: [
      "steplog stream chat-7 answer",
      "steplog stream chat-7 answer --follow",
      "steplog stream chat-7 answer --from 120 --follow --json",
      "steplog stream chat-7 answer --after 131 --follow --json",
    ],
  },
  async run(session, parsed) {
    const [id, name] = parsed.positionals as [string, string];
    const from = integerOption(parsed, "from", "stream", 0);
    const after = integerOption(parsed, "after", "stream", 0);
    if (from !== undefined && after !== undefined) {
      throw new UsageError(
        `steplog stream: --from and --after were both given; pass one: --after SEQ (the seq of the last item shown) to resume, --from N (an offset) to start at a chunk.`,
      );
    }
    const follow = booleanOption(parsed, "follow");
    const stdout = session.io.stdout;
    const controller = new AbortController();
    const guard = follow ? guardSignals(controller, (text) => session.err(text), "reading the stream") : undefined;
    try {
      await session.read(async (engine) => {
        for await (const item of engine.readStream(id, name, {
          ...(from === undefined ? {} : { from }),
          ...(after === undefined ? {} : { after }),
          follow,
          signal: controller.signal,
        })) {
          if (session.json) stdout.write(terminalJson(JSON.stringify(item)) + "\n");
          else if (item.type === "reset") session.err(`[steplog: reset to offset ${item.offset}]`);
          else stdout.write(typeof item.chunk === "string" ? safe(item.chunk, true) : `${terminalJson(JSON.stringify(item.chunk) ?? "null")}\n`);
        }
      });
    } finally {
      guard?.remove();
    }
    return EXIT.ok;
  },
};
