/** steplog run <workflow-file> [--id ID] [--continue] [--from-step S] [--redo S] [--reuse S] [--timeout 10m] [--force] -- args… */

import type { Engine } from "../../engine/engine.js";
import { booleanOption, durationOption, listOption, stringOption } from "../args.js";
import { attend, exitFor, report } from "../attempt-view.js";
import type { Command } from "../command.js";
import { UsageError, WorkflowLoadError } from "../exit.js";
import { command, safe } from "../format.js";
import { argsFrom, loadWorkflowFile, resolveSource } from "../load-workflow.js";

export const run: Command = {
  help: {
    name: "run",
    summary: "start a run of a workflow file, or continue one",
    usage: [
      "steplog run <workflow-file> [--id ID] [--timeout 10m] [-- args…]",
      "steplog run [<workflow-file>] --continue --id ID [--from-step STEP] [--redo STEP] [--reuse STEP] [--force] [--timeout 10m]",
    ],
    description: [
      "Loads the module (.js, .mjs, .cjs, or .ts/.mts/.cts through tsx) whose default export is a workflow made with defineWorkflow, and starts a run of it. The file's absolute path is recorded as the run's source, so a later continue needs only the id.",
      'Args, from the words after --: if the module exports prepare(argv), its return value (it may be async); otherwise a single word that parses as JSON is that value (\'{"issue":"#212"}\', 42, \'"text"\'); otherwise the words as an array of strings ([] when there are none).',
      "--continue runs the next attempt of run ID: every step with a succeeded record is reused (↺), the rest runs. Without a file it loads the workflow from the source recorded when the run started; with one it uses that file (the recorded source is never changed).",
      "While it runs, each step is shown as it goes: a spinner while it runs (on a terminal), ✓ done with its time, ✗ failed with its error, ↺ reused with the attempt that recorded it (and how long ago, once over an hour). Ctrl-C cancels the attempt cleanly (the run can be continued); a second Ctrl-C exits at once.",
    ],
    options: {
      id: { type: "string", value: "ID", description: "The run's id (default: a new ULID). Required with --continue." },
      continue: { type: "boolean", description: "Continue run ID instead of starting one." },
      "from-step": { type: "string", value: "STEP", description: "With --continue: redo this step (a key like fetch#2, or a name) and everything after it." },
      redo: {
        type: "string",
        multiple: true,
        value: "STEP",
        description:
          "With --continue: run this succeeded irreversible step again (a continue stops before one otherwise: REDO_IRREVERSIBLE); it is a start point of its own. Repeat for more.",
      },
      reuse: {
        type: "string",
        multiple: true,
        value: "STEP",
        description: "With --continue: hand this succeeded irreversible step's record back instead of running it again. Repeat for more.",
      },
      force: { type: "boolean", description: "With --continue: take a dead-lettered run back with a fresh attempt budget." },
      timeout: {
        type: "string",
        value: "DURATION",
        description: "The run's deadline, from now: 30s, 10m, 2h. It holds across attempts and parks; past it the run ends timed-out.",
      },
    },
    positionals: { min: 0, max: 1, names: ["<workflow-file>"] },
    takesRest: true,
    examples: [
      `steplog run examples/cli/hello.mjs --id hello-1 -- '{"topic":"crashes"}'`,
      "steplog run --continue --id hello-1",
      "steplog run --continue --id hello-1 --from-step draft",
    ],
  },
  async run(session, parsed) {
    const file = parsed.positionals[0];
    const isContinue = booleanOption(parsed, "continue");
    const id = stringOption(parsed, "id");
    const fromStep = stringOption(parsed, "from-step");
    const force = booleanOption(parsed, "force");
    const redo = listOption(parsed, "redo");
    const reuse = listOption(parsed, "reuse");
    const timeoutMs = durationOption(parsed, "timeout", "run");
    const cwd = session.io.cwd;

    if (!isContinue) {
      if (file === undefined)
        throw new UsageError(
          "steplog run: give a workflow file to start, or --continue --id ID to continue a run.",
          "Usage: steplog run <workflow-file> [--id ID] [-- args…]",
        );
      const stray = fromStep !== undefined ? "from-step" : force ? "force" : redo.length > 0 ? "redo" : reuse.length > 0 ? "reuse" : undefined;
      if (stray !== undefined) throw new UsageError(`steplog run: --${stray} goes with --continue.`);
      const loaded = await loadWorkflowFile(file, cwd);
      const args = await argsFrom(loaded, parsed.rest);
      let engine: Engine | undefined;
      const attended = await attend(session, "the attempt", async ({ onProgress, signal }) => {
        engine = await session.engine({ workflows: loaded.all, onProgress });
        return engine.start(loaded.workflow, args as never, {
          ...(id !== undefined ? { id } : {}),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          signal,
          source: loaded.file,
        });
      });
      await report(session, engine!, attended);
      return exitFor(attended);
    }

    if (id === undefined) throw new UsageError("steplog run --continue needs --id ID: the run to continue.", "Find it with: steplog runs");
    if (parsed.rest.length > 0) throw new UsageError("steplog run --continue takes no args after --: a run keeps the args it started with.");
    const view = await session.read((engine) => engine.get(id, { redact: true }));
    const source = file ?? view.source ?? undefined;
    if (source === undefined) {
      throw new WorkflowLoadError(
        `Run ${JSON.stringify(id)} has no recorded source (it was started by an app, not by steplog run), so its workflow file is unknown: give the file that defines workflow ${JSON.stringify(view.workflow)}.`,
        `${command("steplog", "run")} <workflow-file> ${command("--continue", "--id", id)}`,
      );
    }
    // A child run records its parent's file: the workflow of that name among what it exports.
    const loaded = await loadWorkflowFile(source, cwd, view.workflow);
    if (loaded.workflow.name !== view.workflow) {
      throw new WorkflowLoadError(
        `${loaded.file} defines workflow ${JSON.stringify(loaded.workflow.name)}, but run ${JSON.stringify(id)} belongs to ${JSON.stringify(view.workflow)}.`,
        `${command("steplog", "run")} <workflow-file> ${command("--continue", "--id", id)}`,
      );
    }
    if (file !== undefined && view.source && resolveSource(view.source, cwd) !== loaded.file && !session.json) {
      session.err(session.errPaint("gray", `steplog: continuing with ${safe(loaded.file)}; the run's recorded source stays ${safe(view.source)}.`));
    }
    let engineRef: Engine | undefined;
    const attended = await attend(session, `run ${JSON.stringify(id)}`, async ({ onProgress, signal }) => {
      engineRef = await session.engine({ workflows: loaded.all, onProgress });
      return engineRef.continue(id, {
        ...(fromStep !== undefined ? { fromStep } : {}),
        ...(force ? { force: true } : {}),
        ...(redo.length > 0 ? { redo } : {}),
        ...(reuse.length > 0 ? { reuse } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        signal,
      });
    });
    await report(session, engineRef!, attended);
    return exitFor(attended);
  },
};
