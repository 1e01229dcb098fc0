/** steplog ui: a live local web UI over the store (src/cli/ui/). */

import type { Engine } from "../../engine/engine.js";
import { booleanOption, durationOption, integerOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { EXIT, UsageError } from "../exit.js";
import { safe } from "../format.js";
import { loadWorkflowFile } from "../load-workflow.js";
import { guardSignals } from "../signals.js";
import type { UiContext } from "../ui/layout.js";
import { newToken, startUiServer } from "../ui/server.js";

export const ui: Command = {
  help: {
    name: "ui",
    summary: "a live local web UI: runs, one run's attempts and steps on one time axis, the human queue with its buttons",
    usage: ["steplog ui [--port 4317] [--host 127.0.0.1] [--read-only] [--poll 1s]"],
    description: [
      "Serves pages over the store (the same --db, --store, STEPLOG_KEYS and --redact as the other commands): the runs, filtered by status, workflow and text in the id; one run with its attempts on one time axis, each step's status, effect, idempotency key, duration, calls and each call's error, cost, and its value in an inspector, and its streams as they stand; the human queue (escalations, approvals, runs parked on their budget, dead letters) with buttons that do what steplog resolve, approve, reject, budget, cancel and run --continue do. Pages follow the store live (runs moved on by other processes too). GET /runs/<id>/streams/<name> serves a run's stream as server-sent events (resume with Last-Event-ID or ?from=N).",
      "It listens on 127.0.0.1 only unless --host says otherwise; the buttons work only from its own pages (a per-process token and a same-origin check). --read-only shows no buttons and refuses every change. Ctrl-C stops it.",
    ],
    options: {
      port: { type: "string", value: "N", description: "The port (default 4317; 0 picks a free one)." },
      host: { type: "string", value: "ADDRESS", description: "The address to listen on (default 127.0.0.1: this machine only)." },
      "read-only": { type: "boolean", description: "Show, change nothing: no buttons, and every change refused." },
      poll: { type: "string", value: "DURATION", description: "How often a live page looks at the store again (default 1s)." },
    },
    positionals: { min: 0, max: 0, names: [] },
    examples: ["steplog ui", "steplog ui --db .steplog/steplog.db --port 8080", "steplog ui --store postgres://localhost/app --read-only"],
  },
  async run(session, parsed) {
    const port = integerOption(parsed, "port", "ui", 0) ?? 4317;
    if (port > 65_535) throw new UsageError(`steplog ui: --port must be at most 65535, got ${port}.`);
    const host = stringOption(parsed, "host") ?? "127.0.0.1";
    const readOnly = booleanOption(parsed, "read-only");
    const pollMs = durationOption(parsed, "poll", "ui") ?? 1000;
    const engine = await session.engine({ readonly: readOnly && session.storeSpec.kind === "sqlite" });
    session.requireStore();
    /** The engines that run continues, one per workflow file (its workflows registered), made when first needed. */
    const runners = new Map<string, Promise<Engine>>();
    const ctx: UiContext = {
      engine,
      readOnly,
      token: newToken(),
      redacting: session.redacting(),
      storeLabel: session.describeStore(),
      now: () => session.now(),
      continueRun: async (id, options) => {
        // As `steplog run --continue`: the workflow from the run's recorded source.
        const view = await engine.get(id);
        if (!view.source) {
          throw new UsageError(
            `Run ${JSON.stringify(id)} has no recorded source (it was started by an app), so the UI cannot load its workflow.`,
            `Continue it from the app, or: steplog run <workflow-file> --continue --id ${id}`,
          );
        }
        const loaded = await loadWorkflowFile(view.source, session.io.cwd, view.workflow);
        if (!runners.has(loaded.file)) runners.set(loaded.file, session.engine({ workflows: loaded.all }));
        const runner = await runners.get(loaded.file)!;
        const done = runner.continue(id, options.force ? { force: true } : {});
        // A refusal comes at the claim, at once: said on the page. The attempt itself runs on, the page following it.
        const early = await Promise.race([done.then(() => "ended" as const), new Promise<"running">((resolve) => setTimeout(() => resolve("running"), 300))]);
        if (early === "running") {
          done.catch((error: unknown) => session.err(`steplog ui: the continue of run ${safe(id)} failed: ${safe((error as Error).message)}`));
        }
      },
    };
    const server = await startUiServer(ctx, { host, port, pollMs });
    // One line, like work's --json: a script reads the URL from the first line.
    if (session.json) session.out(JSON.stringify({ url: server.url, readOnly, store: ctx.storeLabel }));
    else {
      session.out(
        `steplog ui on ${session.paint("cyan", server.url)}  ${session.paint("gray", `(${safe(ctx.storeLabel)}${readOnly ? ", read-only" : ""}; Ctrl-C stops it)`)}`,
      );
    }
    const stop = new AbortController();
    const guard = guardSignals(stop, (text) => session.err(text), "the UI");
    await new Promise<void>((resolve) => stop.signal.addEventListener("abort", () => resolve(), { once: true }));
    guard.remove();
    await server.close();
    return EXIT.ok;
  },
};
