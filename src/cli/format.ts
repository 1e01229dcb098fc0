/**
 * Text helpers shared by every command: colour (only on a TTY, never with NO_COLOR), durations
 * and ages, shell quoting for the "next command" lines, and `safe()`, which keeps recorded text
 * (error messages, values) from writing control sequences to the user's terminal.
 */

import { durationMs } from "../base/duration.js";

export type Style = "bold" | "dim" | "red" | "green" | "yellow" | "blue" | "magenta" | "cyan" | "gray";

const CODES: Record<Style, [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
};

export type Paint = (style: Style | Style[], text: string) => string;

export function painter(color: boolean): Paint {
  if (!color) return (_style, text) => text;
  return (style, text) => {
    const styles = Array.isArray(style) ? style : [style];
    return styles.reduce((inner, s) => `\x1b[${CODES[s][0]}m${inner}\x1b[${CODES[s][1]}m`, text);
  };
}

/** Colour for a stream: a TTY, no NO_COLOR, no --no-color; FORCE_COLOR=1 forces it (for tests). */
export function wantsColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv, noColorFlag: boolean): boolean {
  if (noColorFlag) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0") return true;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

/** Strip colour codes (to measure or test what a line says). */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex -- strips the terminal colour codes it wrote
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

/**
 * Recorded text made safe for a terminal: control characters (ESC, BEL, CR, …) and
 * bidirectional overrides become visible escapes; newlines are kept only when `multiline`.
 */
/** What a terminal acts on beyond the C0 controls: DEL, the C1 controls, bidirectional marks. */
const TERMINAL_ACTS_ON = "\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";
const UNSAFE_TEXT = new RegExp(`[\\u0000-\\u001f${TERMINAL_ACTS_ON}]`, "g");
const UNSAFE_IN_JSON = new RegExp(`[${TERMINAL_ACTS_ON}]`, "g");

export function safe(text: string, multiline = false): string {
  return text.replace(UNSAFE_TEXT, (c) => {
    if (multiline && c === "\n") return c;
    if (c === "\t") return "  ";
    if (c === "\n") return "↵ ";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
}

/** Cut a string to at most `max` characters (code points), with an ellipsis. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}

/** 850 ms, 1.2s, 12s, 3m 05s, 2h 14m, 3d 4h. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  const d = Math.floor(h / 24);
  return `${d}d ${h % 24}h`;
}

/** How long ago: "just now", "40s ago", "3h 12m ago". */
export function formatAge(thenMs: number, nowMs: number): string {
  const ms = nowMs - thenMs;
  if (!Number.isFinite(ms)) return "?";
  if (ms < 1000) return "just now";
  return `${formatDuration(ms)} ago`;
}

export const HOUR_MS = 3_600_000;

/** Parse "500ms", "30s", "10m", "2h", "1d", "1h30m". A unit is required. */
export function parseDuration(text: string): number | undefined {
  return durationMs(text);
}

/** Placeholders for a path the user types, shown as they are. */
const PATH_PLACEHOLDERS = new Set(["<file>", "<workflow-file>"]);

/** Quote one word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  if (word !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  if (PATH_PLACEHOLDERS.has(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The steplog options that take no value (every other "--word" is followed by its value). */
const FLAGS = new Set(["--continue", "--force", "--help", "--json", "--keep", "--no-color", "--redo", "--until-idle"]);

/**
 * A command line to show, each word quoted as needed, and one that parses as meant when a value
 * starts with "-" (a run id "-x"): an option's value is joined to it (--id=-x), and the
 * positional words go last, after "--".
 */
export function command(...words: string[]): string {
  if (!words.some((w, i) => i > 0 && w.startsWith("-") && !w.startsWith("--"))) return words.map(shellQuote).join(" ");
  const head: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word.startsWith("--")) {
      const value = FLAGS.has(word) ? undefined : words[i + 1];
      if (value === undefined) head.push(shellQuote(word));
      else {
        head.push(value.startsWith("-") ? `${word}=${shellQuote(value)}` : `${shellQuote(word)} ${shellQuote(value)}`);
        i++;
      }
    } else if (head.length < 2 && positionals.length === 0 && !word.startsWith("-"))
      head.push(shellQuote(word)); // "steplog", the command
    else positionals.push(shellQuote(word));
  }
  return [...head, ...(positionals.length ? ["--", ...positionals] : [])].join(" ");
}

/** A value as indented JSON (BigInt, Map and Set shown as JSON can), for a value shown whole. */
export function prettyJson(value: unknown): string {
  try {
    const text = JSON.stringify(
      value,
      (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v instanceof Map ? Object.fromEntries(v) : v instanceof Set ? [...v] : v),
      2,
    );
    return text === undefined ? "undefined" : text;
  } catch {
    return String(value);
  }
}

/** A value in one line of JSON, cut to `max` characters. */
export function oneLineJson(value: unknown, max = 200): string {
  let text: string;
  try {
    text = JSON.stringify(value, (_key, v: unknown) =>
      typeof v === "bigint" ? `${v}n` : v instanceof Map ? Object.fromEntries(v) : v instanceof Set ? [...v] : v,
    );
  } catch {
    text = String(value);
  }
  if (text === undefined) text = "undefined";
  return truncate(safe(text), max);
}

/** Usage as "$0.0123 · 1,200 in / 340 out tokens · pages 3". */
export function formatUsage(usage: Record<string, number> | undefined): string {
  if (!usage) return "";
  const parts: string[] = [];
  const { costUsd, inputTokens, outputTokens, ...rest } = usage;
  if (costUsd !== undefined) parts.push(formatUsd(costUsd));
  if (inputTokens !== undefined || outputTokens !== undefined) {
    parts.push(`${(inputTokens ?? 0).toLocaleString("en-US")} in / ${(outputTokens ?? 0).toLocaleString("en-US")} out tokens`);
  }
  for (const [name, amount] of Object.entries(rest)) parts.push(`${safe(name)} ${formatNumber(amount)}`);
  return parts.join(" · ");
}

export function formatUsd(amount: number): string {
  if (amount === 0) return "$0";
  if (Math.abs(amount) >= 1) return `$${amount.toFixed(2)}`;
  return `$${amount.toPrecision(3).replace(/0+$/, "").replace(/\.$/, "")}`;
}

function formatNumber(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString("en-US") : String(Math.round(n * 1000) / 1000);
}

/** Sum usage records field by field. */
export function addUsage(into: Record<string, number>, more: Record<string, number> | undefined): Record<string, number> {
  if (more) for (const [k, v] of Object.entries(more)) if (typeof v === "number" && Number.isFinite(v)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** Left-aligned columns; the last column is not padded. Widths are measured without colour. */
export function columns(rows: string[][], gap = 2): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell))));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat((widths[i] ?? 0) - visibleLength(cell) + gap)))
      .join("")
      .trimEnd(),
  );
}

export function visibleLength(text: string): number {
  return [...stripAnsi(text)].length;
}

/**
 * JSON for a terminal or a log: what JSON.stringify leaves raw but a terminal acts on (DEL and the
 * C1 controls, bidirectional-format characters) written as \u escapes; still the same JSON.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A run's budget in a line: "$1.20 of $2.00, 12,000 of 50,000 tokens spent", or "draws on run P's ($1.20 spent here)". */
export function budgetText(t: { budget?: { usd?: number; tokens?: number }; budgetRun?: string; spent?: { usd: number; tokens: number } }): string | undefined {
  if (!t.spent) return undefined;
  const spent = t.spent;
  if (t.budgetRun !== undefined) return `draws on run ${safe(t.budgetRun)}'s (${formatUsd(spent.usd)}, ${formatNumber(spent.tokens)} tokens spent here)`;
  const b = t.budget ?? {};
  const parts: string[] = [];
  if (b.usd !== undefined) parts.push(`${formatUsd(spent.usd)} of ${formatUsd(b.usd)}`);
  if (b.tokens !== undefined) parts.push(`${formatNumber(spent.tokens)} of ${formatNumber(b.tokens)} tokens`);
  return `${parts.join(", ")} spent`;
}

/** What a run parked on a budget waits for: "a raise of its budget before step "model#3"". */
export function budgetWaitText(w: { step: string; budgetRun?: string }): string {
  return `a raise of ${w.budgetRun === undefined ? "its budget" : `the budget of run ${safe(w.budgetRun)}`} before step ${safe(w.step)}`;
}
