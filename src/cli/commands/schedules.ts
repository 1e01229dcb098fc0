/** steplog schedules: the schedules of the workflows a worker would load, with their next ticks. */

import { MAX_TICKS_PER_LOOK } from "../../engine/schedules.js";
import { integerOption, listOption } from "../args.js";
import type { Command } from "../command.js";
import { WorkflowDiscovery } from "../discover.js";
import { EXIT, UsageError } from "../exit.js";
import { columns, formatAge, formatDuration, safe } from "../format.js";

export const schedules: Command = {
  help: {
    name: "schedules",
    summary: "the schedules of the workflows a worker loads: each cron, its last started tick and its next ticks",
    usage: ["steplog schedules [--workflow FILE]… [--next N] [--json]"],
    description: [
      "Loads workflows as steplog work does (the --workflow files, and the sources recorded by runs that may become ready) and lists each one's schedule (defineWorkflow({ schedule })): its cron, time zone and catch-up, the newest tick that has a run (its id and status), and the next ticks with the ids their runs will get. steplog work starts one run per tick, however many workers run.",
    ],
    options: {
      workflow: { type: "string", multiple: true, value: "FILE", description: "Load this workflow file (repeat for more)." },
      next: { type: "string", value: "N", description: `How many next ticks to list per schedule (default 5, at most ${MAX_TICKS_PER_LOOK}).` },
    },
    positionals: { min: 0, max: 0, names: [] },
    examples: ["steplog schedules --workflow src/report.ts", "steplog schedules --workflow report.mjs --next 10 --json"],
  },
  async run(session, parsed) {
    const next = integerOption(parsed, "next", "schedules", 0) ?? 5;
    if (next > MAX_TICKS_PER_LOOK) throw new UsageError(`steplog schedules: --next must be at most ${MAX_TICKS_PER_LOOK}, got ${next}.`);
    const discovery = new WorkflowDiscovery(session.io.cwd, (text) => session.err(session.errPaint("gray", safe(text))));
    await discovery.addFiles(listOption(parsed, "workflow"));
    await session.read((engine) => discovery.discover(engine));
    const workflows = [...discovery.loaded.values()].map((l) => l.workflow);
    const list = await session.read((engine) => engine.schedules({ next }), { workflows });
    const fileOf = (name: string) => discovery.loaded.get(name)?.file ?? null;
    if (session.json) {
      session.printJson(list.map((s) => ({ ...s, file: fileOf(s.workflow) })));
      return EXIT.ok;
    }
    if (list.length === 0) {
      session.out(
        session.paint(
          "gray",
          workflows.length === 0
            ? "No workflow loaded: give the workflow files with --workflow FILE."
            : `No schedule in the workflows loaded (${workflows.map((w) => safe(w.name)).join(", ")}).`,
        ),
      );
      return EXIT.ok;
    }
    const now = session.now();
    for (const s of list) {
      session.out(
        `${session.paint("bold", safe(s.workflow))} ${session.paint("cyan", safe(s.cron))} ${session.paint("gray", `(${safe(s.timezone)}, catch-up ${s.catchUp})`)}`,
      );
      const rows: string[][] = [];
      rows.push([
        "  last",
        s.last ? `${safe(s.last.runId)}  ${s.last.status}, ${formatAge(Date.parse(s.last.at), now)}` : session.paint("gray", "no tick has a run yet"),
      ]);
      s.next.forEach((tick, i) => {
        const ms = Date.parse(tick.at) - now;
        rows.push([i === 0 ? "  next" : "", `${safe(tick.runId)}  ${session.paint("gray", ms < 1000 ? "now" : `in ${formatDuration(ms)}`)}`]);
      });
      session.lines(columns(rows));
      const file = fileOf(s.workflow);
      if (file) session.out(session.paint("gray", `  from ${safe(file)}`));
    }
    return EXIT.ok;
  },
};
