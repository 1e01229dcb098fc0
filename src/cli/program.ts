/**
 * The `steplog` command: see, continue and steer runs from a terminal. This file picks the
 * command (main.ts is the bin that calls it), runs it, and turns what went wrong into a message, a next command and an exit code
 * (see exit.ts and docs/cli.md).
 */

import fs from "node:fs";
import path from "node:path";
import { isSteplogError } from "../base/errors.js";
import { COMMON_OPTIONS, parseCommand, renderHelp, type Parsed } from "./args.js";
import type { Command } from "./command.js";
import { approve, reject } from "./commands/approve.js";
import { approvals } from "./commands/approvals.js";
import { budget } from "./commands/budget.js";
import { cancel } from "./commands/cancel.js";
import { compensate } from "./commands/compensate.js";
import { deadLetters } from "./commands/dead-letters.js";
import { escalations } from "./commands/escalations.js";
import { exportCommand } from "./commands/export.js";
import { importCommand } from "./commands/import.js";
import { prune } from "./commands/prune.js";
import { recover } from "./commands/recover.js";
import { resolve } from "./commands/resolve.js";
import { run } from "./commands/run.js";
import { runs } from "./commands/runs.js";
import { schedules } from "./commands/schedules.js";
import { ui } from "./commands/ui.js";
import { send } from "./commands/send.js";
import { show } from "./commands/show.js";
import { stream } from "./commands/stream.js";
import { work } from "./commands/work.js";
import { CliError, codeOf, EXIT, exitCodeOf, type ExitCode } from "./exit.js";
import { command, painter, safe, wantsColor } from "./format.js";
import { Session, type Io } from "./session.js";

export const COMMANDS: Record<string, Command> = {
  run,
  runs,
  show,
  recover,
  escalations,
  resolve,
  approvals,
  approve,
  reject,
  budget,
  send,
  compensate,
  "dead-letters": deadLetters,
  cancel,
  work,
  schedules,
  export: exportCommand,
  import: importCommand,
  stream,
  prune,
  ui,
};

export function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length)) + 2;
  const lines = [
    "steplog: see, continue and steer durable runs from a terminal.",
    "",
    "Usage: steplog <command> [options]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}${c.help.summary}`),
    "",
    "Common options (every command):",
    ...Object.entries(COMMON_OPTIONS).map(([name, o]) => `  --${`${name}${o.value ? ` ${o.value}` : ""}`.padEnd(14)}${o.description}`),
    "",
    "A typical session:",
    '  steplog run workflow.mjs --id job-1 -- \'{"topic":"x"}\'   # start; Ctrl-C or a crash stops it',
    "  steplog runs --status interrupted,failed                # find what stopped",
    "  steplog show job-1                                      # what it did, what it cost",
    "  steplog run --continue --id job-1                       # go on: finished steps are reused",
    "",
    "Exit codes: 0 ok · 1 the run ended without completing · 2 usage error · 3 refused (the",
    "error code is printed) · 4 no such run or step · 5 store unavailable · 6 workflow file not",
    "loadable · 70 internal error · 130 interrupted.",
    "",
    "steplog <command> --help shows a command's options. Docs: docs/cli.md.",
  ];
  return lines.join("\n") + "\n";
}

function version(): string {
  try {
    // The bin is dist/cli.js (the package root is one folder up); from source, src/cli/main.ts.
    const here = path.dirname(fs.realpathSync(process.argv[1] ?? "."));
    for (const candidate of [path.join(here, "..", "package.json"), path.join(here, "..", "..", "package.json")]) {
      if (fs.existsSync(candidate)) {
        const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string };
        if (pkg.name === "steplog" && pkg.version) return pkg.version;
      }
    }
  } catch {
    // fall through
  }
  return "unknown";
}

/** Run the command line; resolves with the exit code. Never throws. */
export async function main(argv: string[], io: Io): Promise<ExitCode> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    if (name === "help" && rest[0] && COMMANDS[rest[0]]) {
      io.stdout.write(renderHelp(COMMANDS[rest[0]]!.help));
      return EXIT.ok;
    }
    io[name === undefined ? "stderr" : "stdout"].write(mainHelp());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "-v" || name === "version") {
    io.stdout.write(`steplog ${version()}\n`);
    return EXIT.ok;
  }
  const cmd = COMMANDS[name];
  if (!cmd) {
    const near = Object.keys(COMMANDS).filter((c) => c.startsWith(name.slice(0, 2)));
    io.stderr.write(
      `steplog: unknown command ${JSON.stringify(name)}.${near.length ? ` Did you mean ${near.join(" or ")}?` : ""} Type steplog --help for the list.\n`,
    );
    return EXIT.usage;
  }
  let parsed: Parsed | undefined;
  let session: Session | undefined;
  try {
    parsed = parseCommand(cmd.help, rest);
    if (parsed.values.help) {
      io.stdout.write(renderHelp(cmd.help));
      return EXIT.ok;
    }
    session = new Session(io, parsed, name);
    return await cmd.run(session, parsed);
  } catch (error) {
    return reportError(error, io, parsed, name);
  } finally {
    await session?.close();
  }
}

function reportError(error: unknown, io: Io, parsed: Parsed | undefined, name: string): ExitCode {
  const exit = exitCodeOf(error);
  const code = codeOf(error);
  const json = parsed?.values.json === true;
  const paint = painter(wantsColor(io.stderr, io.env, parsed?.values["no-color"] === true));
  const raw = error instanceof Error ? error.message : String(error);
  const message = raw.startsWith(`steplog ${name}: `) ? raw.slice(`steplog ${name}: `.length) : raw;
  const hint = hintFor(error, name);
  if (json) {
    io.stdout.write(
      JSON.stringify(
        {
          error: { code, name: error instanceof Error ? error.name : "Error", message, ...(hint ? { [isCommand(hint) ? "next" : "hint"]: hint } : {}) },
          exitCode: exit,
        },
        null,
        2,
      ) + "\n",
    );
  }
  const label = exit === EXIT.usage ? "usage" : code;
  io.stderr.write(`${paint(["red", "bold"], `steplog ${name}: ${label}`)}: ${safe(message, true)}\n`);
  if (hint) io.stderr.write(isCommand(hint) ? `${paint("gray", "next:")} ${paint("cyan", safe(hint))}\n` : `${paint("gray", "hint:")} ${safe(hint)}\n`);
  if (exit === EXIT.internal && error instanceof Error && error.stack)
    io.stderr.write(paint("gray", `${safe(error.stack, true)}\nThis is a bug in steplog; please report it with the output above.\n`));
  return exit;
}

const isCommand = (hint: string) => hint.startsWith("steplog ");

/** The command to type next, in steplog-command terms, for a refusal. */
export function hintFor(error: unknown, name: string): string | undefined {
  if (error instanceof CliError) return error.hint;
  if (!isSteplogError(error)) return undefined;
  const id = error.runId;
  const go = id === undefined ? undefined : command("steplog", "run", "--continue", "--id", id);
  switch (error.code) {
    case "RUN_EXISTS":
      return go ? `${go}   (or start with another --id)` : undefined;
    case "RUN_COMPLETED":
      return go ? `${go} --from-step <step>   (see the steps: ${command("steplog", "show", id!)})` : undefined;
    case "RUN_ESCALATED":
      return id && error.step
        ? `${command("steplog", "resolve", id, error.step, "--value", "<json>")}   or   ${command("steplog", "resolve", id, error.step, "--redo")}`
        : "steplog escalations";
    case "DEAD_LETTERED":
      return go ? `${go} --force` : undefined;
    case "RUN_BUSY":
      return id ? `${command("steplog", "show", id)}   (wait for that attempt, or ${command("steplog", "cancel", id)})` : undefined;
    case "IMPORT_RUN_EXISTS":
      return id ? `${command("steplog", "show", id)}   (or import into another store: --db FILE, --store URL)` : undefined;
    case "RUN_NOT_FOUND":
      return `steplog runs   (is it in another store? --db FILE, --store URL)`;
    case "STEP_NOT_FOUND":
    case "NOT_ESCALATED":
    case "NOT_WAITING":
      return id ? command("steplog", "show", id) : undefined;
    case "PAST_PIVOT":
      return go;
    case "STORE_TOO_NEW":
      return "upgrade steplog (npm install steplog@latest)";
    case "WORKFLOW_NOT_REGISTERED":
      return id
        ? name === "compensate"
          ? command("steplog", "compensate", id, "--workflow", "<file>")
          : `${command("steplog", "run")} <workflow-file> ${command("--continue", "--id", id)}`
        : undefined;
    default:
      return undefined;
  }
}

/** The bin: run with the process's streams and exit with the code once output is flushed. */
export async function runBin(): Promise<never> {
  const io: Io = { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd(), now: () => Date.now() };
  // A closed pipe (steplog runs | head) is not an error.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(EXIT.ok);
  });
  const code = await main(process.argv.slice(2), io);
  // Workflow modules may leave timers or sockets open; the command is done, so exit.
  await new Promise<void>((done) => process.stdout.write("", () => done()));
  await new Promise<void>((done) => process.stderr.write("", () => done()));
  process.exit(code);
}
