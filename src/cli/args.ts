/**
 * Command-line parsing on node:util parseArgs: each command declares its options; the common
 * ones (--db, --store, --json, --no-color, --help) are added to every command. Words after a
 * bare `--` are handed to the command untouched (`steplog run file.mjs -- args…`).
 */

import { parseArgs } from "node:util";
import { UsageError } from "./exit.js";
import { parseDuration } from "./format.js";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Shown in --help after the option: `--id ID`. */
  value?: string;
  description: string;
}

export interface CommandHelp {
  name: string;
  /** One line, for `steplog --help`. */
  summary: string;
  /** The synopsis lines after "Usage:". */
  usage: string[];
  /** Paragraphs shown under the synopsis. */
  description: string[];
  options: Record<string, OptionSpec>;
  /** Example command lines. */
  examples?: string[];
  /** Whether words after `--` are allowed. */
  takesRest?: boolean;
  /** Positional arguments: min and max count. */
  positionals: { min: number; max: number; names: string[] };
}

export const COMMON_OPTIONS: Record<string, OptionSpec> = {
  db: { type: "string", value: "FILE", description: "The SQLite store to use (default .steplog/steplog.db in the working directory; env STEPLOG_DB)." },
  store: { type: "string", value: "URL", description: "Another store: postgres://user@host/db, jsonl:FILE or sqlite:FILE (env STEPLOG_STORE). Not with --db." },
  schema: {
    type: "string",
    value: "NAME",
    description: "The Postgres store's schema, as postgresStore({ schema }) (default steplog; env STEPLOG_PG_SCHEMA). Only with --store postgres://…",
  },
  driver: {
    type: "string",
    value: "NAME",
    description:
      "The SQLite driver, as sqliteStore({ driver }): auto (default: better-sqlite3 where it loads, else the runtime's built-in), better-sqlite3, node:sqlite or bun:sqlite. Only with a SQLite store.",
  },
  json: { type: "boolean", description: "Print one JSON document on stdout instead of text, for scripts." },
  redact: {
    type: "string",
    value: "PATHS",
    description: "Show these value paths as [redacted], comma-separated: token,card.number (env STEPLOG_REDACT). Stored records are untouched.",
  },
  create: {
    type: "boolean",
    description:
      "With --db or --store FILE for a command that reads: make an empty store there if there is none (a named path with no store is refused otherwise).",
  },
  "no-color": { type: "boolean", description: "No colour even on a terminal (colour is also off with NO_COLOR or when not a TTY)." },
  help: { type: "boolean", short: "h", description: "Show this help." },
};

export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** Words after `--`. */
  rest: string[];
}

export function splitRest(argv: string[]): { before: string[]; rest: string[] | undefined } {
  const at = argv.indexOf("--");
  return at === -1 ? { before: argv, rest: undefined } : { before: argv.slice(0, at), rest: argv.slice(at + 1) };
}

export function parseCommand(help: CommandHelp, argv: string[]): Parsed {
  const { before, rest } = splitRest(argv);
  const options = { ...COMMON_OPTIONS, ...help.options };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: before,
      options: Object.fromEntries(
        Object.entries(options).map(([name, spec]) => [
          name,
          { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}) },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(`steplog ${help.name}: ${tidyParseError((error as Error).message)}`, `Type steplog ${help.name} --help for its options.`);
  }
  const values = parsed.values as Parsed["values"];
  if (values.help) return { values, positionals: parsed.positionals, rest: rest ?? [] };
  // For a command that takes no words after "--", they are its positional arguments: a run id
  // that starts with "-" is given as steplog show -- -x.
  const positionals = rest !== undefined && !help.takesRest ? [...parsed.positionals, ...rest] : parsed.positionals;
  if (rest !== undefined && !help.takesRest) parsed = { ...parsed, positionals };
  const count = positionals.length;
  if (count < help.positionals.min) {
    const missing = help.positionals.names.slice(count, help.positionals.min).join(" ");
    throw new UsageError(`steplog ${help.name}: missing ${missing}.`, `Usage: ${help.usage[0]}`);
  }
  if (count > help.positionals.max) {
    const extra = parsed.positionals.slice(help.positionals.max).join(" ");
    throw new UsageError(`steplog ${help.name}: unexpected argument(s): ${extra}.`, `Usage: ${help.usage[0]}`);
  }
  return { values, positionals: parsed.positionals, rest: help.takesRest ? (rest ?? []) : [] };
}

function tidyParseError(message: string): string {
  // parseArgs messages name the option and suggest "--" for positionals that look like options.
  return message
    .replace(/\. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- "[^"]*"/, "")
    .replace(/\s+$/, "");
}

export function stringOption(parsed: Parsed, name: string): string | undefined {
  const v = parsed.values[name];
  return typeof v === "string" ? v : undefined;
}

export function booleanOption(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

export function listOption(parsed: Parsed, name: string): string[] {
  const v = parsed.values[name];
  if (Array.isArray(v)) return v;
  return typeof v === "string" ? [v] : [];
}

export function durationOption(parsed: Parsed, name: string, command: string): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined)
    throw new UsageError(`steplog ${command}: --${name} ${JSON.stringify(text)} is not a duration; give a number with a unit: 500ms, 30s, 10m, 2h, 1h30m.`);
  return ms;
}

export function integerOption(parsed: Parsed, name: string, command: string, min: number): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`steplog ${command}: --${name} must be a whole number ≥ ${min}, got ${JSON.stringify(text)}.`);
  }
  return n;
}

/** Parse a JSON argument; a usage error that says how to quote it otherwise. */
export function jsonArgument(text: string, what: string, command: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `steplog ${command}: ${what} is not JSON: ${(error as Error).message}.`,
      `Give JSON, quoted for the shell: '{"id":"ch_1"}', 42, '"a string"', true, null.`,
    );
  }
}

export function renderHelp(help: CommandHelp): string {
  const lines: string[] = [];
  lines.push(`steplog ${help.name}: ${help.summary}`, "", "Usage:");
  for (const u of help.usage) lines.push(`  ${u}`);
  for (const p of help.description) lines.push("", ...wrap(p, 78));
  const optionRows = (opts: Record<string, OptionSpec>) =>
    Object.entries(opts).map(([name, spec]) => {
      const left = `${spec.short ? `-${spec.short}, ` : ""}--${name}${spec.value ? ` ${spec.value}` : ""}`;
      return [left, spec.description] as const;
    });
  const own = optionRows(help.options);
  const common = optionRows(COMMON_OPTIONS);
  const width = Math.max(...[...own, ...common].map(([l]) => l.length)) + 2;
  const block = (rows: ReadonlyArray<readonly [string, string]>) => {
    for (const [left, text] of rows) {
      const wrapped = wrap(text, Math.max(30, 78 - width - 2));
      lines.push(`  ${left.padEnd(width)}${wrapped[0] ?? ""}`);
      for (const more of wrapped.slice(1)) lines.push(`  ${" ".repeat(width)}${more}`);
    }
  };
  if (own.length) {
    lines.push("", "Options:");
    block(own);
  }
  lines.push("", "Common options:");
  block(common);
  if (help.examples?.length) {
    lines.push("", "Examples:");
    for (const e of help.examples) lines.push(`  ${e}`);
  }
  lines.push(
    "",
    "Exit codes: 0 ok, 1 the run ended without completing, 2 usage error, 3 refused,",
    "4 not found, 5 store unavailable, 6 workflow not loadable, 70 internal error,",
    "130 interrupted. See docs/cli.md.",
  );
  return lines.join("\n") + "\n";
}

export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}
