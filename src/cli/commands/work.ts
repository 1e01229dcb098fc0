/**
 * steplog work: a worker over ready runs (an event arrived, a timer is due, an approval was
 * given, an interrupted run of an autoResume workflow), loading each run's workflow from the
 * source recorded at its start, or from --workflow files.
 *
 * An engine knows its workflows from its creation, so when a run of a workflow not loaded yet
 * shows up, the worker stops claiming, lets its attempts finish, and starts again with it.
 * The loaded workflows' schedules are started tick by tick (engine.work), each run recording the
 * file its workflow came from as its source.
 */

import type { Engine } from "../../engine/engine.js";
import type { ProgressEvent } from "../../steps/attempt-settings.js";
import type { RunResult } from "../../steps/attempt.js";
import { booleanOption, durationOption, integerOption, listOption } from "../args.js";
import type { Command } from "../command.js";
import { errorText } from "../describe.js";
import { EXIT } from "../exit.js";
import { formatDuration, safe, terminalJson, truncate } from "../format.js";
import { WorkflowDiscovery } from "../discover.js";
import type { Session } from "../session.js";
import { guardSignals } from "../signals.js";

export const work: Command = {
  help: {
    name: "work",
    summary: "a worker: claim and run ready runs (events arrived, timers due, approvals given) until Ctrl-C",
    usage: ["steplog work [--concurrency N] [--poll 1s] [--workflow FILE]… [--until-idle]"],
    description: [
      "Claims runs that are ready through the same lease as a continue and runs them, up to --concurrency at a time: a run whose event arrived (steplog send), whose timer is due (ctx.sleep), whose approval was given (steplog approve), and interrupted runs of workflows that set autoResume. Each run's workflow is loaded from the source recorded when it started; --workflow FILE loads more up front (for runs started by an app).",
      "It also starts one run per tick of the schedule of each workflow loaded (defineWorkflow({ schedule })), with the id <workflow>@<tick>, exactly once however many workers run: load a scheduled workflow with --workflow FILE (see steplog schedules).",
      "Prints one line per step and attempt as they go (with --json, one JSON object per line). Ctrl-C stops claiming and cancels running attempts cleanly; a second Ctrl-C exits at once.",
    ],
    options: {
      concurrency: { type: "string", value: "N", description: "Attempts run at once (default 1)." },
      poll: { type: "string", value: "DURATION", description: "How often to look for ready runs (default 1s)." },
      workflow: { type: "string", multiple: true, value: "FILE", description: "Load this workflow file too (repeat for more)." },
      "until-idle": { type: "boolean", description: "Exit once nothing is ready and no attempt runs (for scripts and cron); exit 1 if an attempt failed." },
    },
    positionals: { min: 0, max: 0, names: [] },
    examples: ["steplog work", "steplog work --concurrency 4 --poll 500ms", "steplog work --workflow src/fix-issue.ts --until-idle"],
  },
  async run(session, parsed) {
    const concurrency = integerOption(parsed, "concurrency", "work", 1) ?? 1;
    const pollMs = durationOption(parsed, "poll", "work") ?? 1000;
    const untilIdle = booleanOption(parsed, "until-idle");
    const log = makeLog(session);
    const discovery = new WorkflowDiscovery(session.io.cwd, (text) => log.note(text));
    await discovery.addFiles(listOption(parsed, "workflow"));
    const loaded = discovery.loaded;
    const discover = (engine: Engine) => discovery.discover(engine);
    const attempts: RunResult[] = [];
    let running = 0;
    const scheduled = new Set<string>();

    const controller = new AbortController();
    let current: { engine: Engine; stop: AbortController } | undefined;
    const guard = guardSignals(controller, (text) => session.err(text), "running attempts");
    controller.signal.addEventListener("abort", () => {
      current?.stop.abort();
      void current?.engine.close().catch(() => {});
    });
    log.note(`worker started on ${session.describeStore()} (concurrency ${concurrency}, poll ${formatDuration(pollMs)})`);
    try {
      const probe = await session.engine();
      await discover(probe);
      await probe.close();
      while (!controller.signal.aborted) {
        const stop = new AbortController();
        const engine = await session.engine({
          workflows: [...loaded.values()].map((l) => l.workflow),
          onProgress: (event) => {
            if (event.type === "attempt-started") running++;
            if (event.type === "attempt-ended") running--;
            log.event(event);
          },
        });
        current = { engine, stop };
        for (const s of await engine.schedules({ next: 1 }).catch(() => [])) {
          if (scheduled.has(s.workflow)) continue;
          scheduled.add(s.workflow);
          log.note(`schedule of ${s.workflow}: ${s.cron} (${s.timezone}, catch-up ${s.catchUp})${s.next[0] ? `, next tick ${s.next[0].at}` : ""}`);
        }
        const worker = engine.work({ concurrency, pollMs, signal: stop.signal, sources: discovery.sources() }).catch((error: unknown) => {
          if (!controller.signal.aborted) throw error;
          return { attempts: [] as RunResult[] };
        });
        let idleTicks = 0;
        const watch = (async () => {
          while (!stop.signal.aborted) {
            await sleep(pollMs, stop.signal);
            if (stop.signal.aborted) break;
            if (await discover(engine).catch(() => false)) {
              log.note("restarting the worker with the new workflow");
              stop.abort();
              break;
            }
            if (untilIdle) {
              // Ready runs this worker can run: due, and of a workflow it has loaded.
              const due = await engine.store
                .listRuns({ status: ["waiting"], dueBy: session.now() })
                .then((listed) => listed.filter((l) => loaded.has(l.run.workflow)).length)
                .catch(() => 1);
              // Idle: nothing due and nothing running for two looks; or runs due that the worker
              // has not been able to take for three (it says why in a warning).
              idleTicks = running === 0 ? idleTicks + 1 : 0;
              if (idleTicks >= (due === 0 ? 2 : 3)) {
                if (due > 0) log.note(`stopping: ${due} ready run(s) could not be taken (see the warnings above)`);
                controller.abort();
                break;
              }
            }
          }
        })();
        const summary = await worker;
        stop.abort();
        await watch;
        attempts.push(...summary.attempts);
        await engine.close().catch(() => {});
        current = undefined;
      }
    } finally {
      guard.remove();
    }
    const failed = attempts.filter((a) => a.status !== "completed" && a.status !== "waiting");
    log.summary(attempts);
    if (guard.received) return EXIT.interrupted;
    return failed.length > 0 && untilIdle ? EXIT.notCompleted : EXIT.ok;
  },
};

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}

function makeLog(session: Session) {
  const p = session.paint;
  const time = () => p("gray", new Date(session.now()).toISOString().slice(11, 19));
  const run = (id: string) => p("bold", truncate(safe(id), 40));
  return {
    note(text: string) {
      if (session.json) session.out(terminalJson(JSON.stringify({ type: "note", at: new Date(session.now()).toISOString(), message: text })));
      else session.out(`${time()} ${p("gray", safe(text))}`);
    },
    event(e: ProgressEvent) {
      if (session.json) {
        session.out(terminalJson(JSON.stringify({ ...e, at: new Date(session.now()).toISOString() })));
        return;
      }
      switch (e.type) {
        case "attempt-started":
          return session.out(`${time()} ${run(e.runId)} ${p("gray", `${safe(e.workflow)} · attempt ${e.attempt}`)}`);
        case "step-reused":
          return session.out(`${time()} ${run(e.runId)}   ${p("cyan", "↺")} ${safe(e.step)} ${p("gray", `reused from attempt ${e.recordedBy}`)}`);
        case "step-succeeded":
          return session.out(`${time()} ${run(e.runId)}   ${p("green", "✓")} ${safe(e.step)} ${p("gray", formatDuration(e.durationMs))}`);
        case "step-failed":
          return session.out(`${time()} ${run(e.runId)}   ${p("red", "✗")} ${safe(e.step)} ${p("red", truncate(safe(errorText(e.error)), 160))}`);
        case "step-resolved":
          return session.out(`${time()} ${run(e.runId)}   ${p("gray", `• ${safe(e.step)} ${e.policy}: ${safe(e.found)}`)}`);
        case "attempt-ended":
          return session.out(
            `${time()} ${run(e.runId)} ${p(e.status === "completed" ? "green" : e.status === "waiting" ? "cyan" : "red", e.status)}${e.error && e.status !== "waiting" ? p("gray", ` ${truncate(safe(errorText(e.error)), 160)}`) : ""}`,
          );
        default:
          return undefined;
      }
    },
    summary(attempts: RunResult[]) {
      const counts = new Map<string, number>();
      for (const a of attempts) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
      const text = [...counts].map(([s, n]) => `${n} ${s}`).join(", ") || "none";
      if (session.json)
        session.out(
          terminalJson(
            JSON.stringify({ type: "summary", attempts: attempts.map((a) => ({ id: a.id, status: a.status, runStatus: a.runStatus, attempt: a.attempt })) }),
          ),
        );
      else session.out(`${time()} ${p("gray", `worker stopped; attempts: ${text}`)}`);
    },
  };
}
