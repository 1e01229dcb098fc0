/**
 * A workflow's schedule: `defineWorkflow({ schedule: { cron, timezone?, catchUp?, args? } })`.
 * Checked once, at defineWorkflow (INVALID_OPTION). Ticks are computed by croner from whatever
 * time the caller gives (the engine's clock, so tests can move time), and each tick's run has an
 * id derived from the tick alone (`<workflow>@<tick, ISO UTC>`), so every worker of every process
 * on a store names it the same without asking any other (src/engine/schedules.ts starts them).
 */

import type { Cron } from "croner";
import { InvalidOptionError } from "../base/errors.js";
import { onFirstUse } from "../base/on-first-use.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { MAX_NAME_LENGTH } from "./names.js";
import { issueLines, type StandardSchemaV1 } from "./value-schemas.js";

/** Which ticks that passed while no worker ran are started when one comes back. */
export type CatchUp = "latest" | "all" | "none";

export const CATCH_UP_MODES: readonly CatchUp[] = ["latest", "all", "none"];

export interface ScheduleDefinition<Args = unknown> {
  /**
   * A cron pattern: five fields (minute hour day-of-month month day-of-week), or six with a
   * seconds field first; also `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`.
   */
  cron: string;
  /** An IANA time zone the pattern is read in ("Europe/Berlin"). Default "UTC", whatever the process's TZ. */
  timezone?: string;
  /**
   * Ticks missed while no worker ran: "latest" (default) starts the most recent one, "all" every
   * one since the last started tick (oldest first, at most 100 per look), "none" none.
   */
  catchUp?: CatchUp;
  /** The args of each tick's run: a value, or a function of the tick. Default undefined. */
  args?: Args | ((tick: Date) => Args | Promise<Args>);
}

export interface Schedule {
  readonly cron: string;
  /** The time zone the pattern is read in: the one given, else "UTC". */
  readonly timezone: string;
  readonly catchUp: CatchUp;
  /** The cron has a seconds field: run ids then name the second, not just the minute. */
  readonly seconds: boolean;
  /** The args for a tick's run (a function given as schedule.args is called here). */
  argsFor(tick: Date): unknown;
  /** The first tick strictly after `ms` (ms since the epoch), or undefined if there is none. */
  after(ms: number): number | undefined;
  /** The last tick at or before `ms`, or undefined if there is none. */
  atOrBefore(ms: number): number | undefined;
  /** The id of the run of the tick at `tick`: `<workflow>@2026-12-01T10:00Z` (with seconds: `…T10:00:05Z`). */
  runId(tick: number): string;
  /** The tick a run id names, when it has this schedule's form (`<workflow>@<ISO UTC>`). */
  tickOf(runId: string): number | undefined;
}

const SCHEDULE_KEYS: KnownKeys<ScheduleDefinition> = { cron: true, timezone: true, catchUp: true, args: true };

/** Length of the tick part of a run id, "@" included: "@2026-12-01T10:00Z" or "@2026-12-01T10:00:05Z". */
const TICK_SUFFIX = { minutes: 18, seconds: 21 };

const TICK_TEXT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$/;

/** croner, loaded by the first schedule defined: an app without schedules never loads it. */
const croner = onFirstUse<typeof import("croner")>("croner");

/** The tick as it appears in a run id: ISO 8601 UTC, to the minute (or the second). */
export function tickText(tick: number, seconds: boolean): string {
  const iso = new Date(tick).toISOString();
  return `${iso.slice(0, seconds ? 19 : 16)}Z`;
}

/**
 * The checked schedule of workflow `name`, or undefined when it has none. `argsSchema`: the
 * workflow's args schema; a schedule.args value (or undefined, when none is given) is checked
 * against it here when the schema answers at once. A function's values, and a schema that
 * answers asynchronously, are checked by start() at each tick.
 */
export function makeSchedule(name: string, definition: unknown, argsSchema: StandardSchemaV1 | undefined): Schedule | undefined {
  if (definition === undefined) return undefined;
  const where = `defineWorkflow(${JSON.stringify(name)}): schedule`;
  if (typeof definition !== "object" || definition === null || Array.isArray(definition)) {
    throw new InvalidOptionError(`${where} must be an object such as { cron: "0 * * * *" }.`);
  }
  checkKnownKeys(where, definition, SCHEDULE_KEYS);
  const given = definition as ScheduleDefinition;
  if (typeof given.cron !== "string" || given.cron.trim() === "") {
    throw new InvalidOptionError(`${where}.cron must be a cron pattern such as "0 * * * *" (every hour), got ${describe(given.cron)}.`);
  }
  const cron = given.cron.trim();
  if (given.timezone !== undefined) checkTimezone(where, given.timezone);
  const timezone = given.timezone ?? "UTC";
  if (given.catchUp !== undefined && !CATCH_UP_MODES.includes(given.catchUp)) {
    throw new InvalidOptionError(`${where}.catchUp must be "latest", "all" or "none", got ${describe(given.catchUp)}.`);
  }
  const { Cron: CronPattern } = loadCroner(where);
  let pattern: Cron;
  try {
    pattern = new CronPattern(cron, { timezone, mode: "5-or-6-parts" });
  } catch (error) {
    throw new InvalidOptionError(
      `${where}.cron ${JSON.stringify(cron)} is not a cron pattern steplog reads: ${(error as Error).message} ` +
        `Use five fields (minute hour day-of-month month day-of-week, e.g. "0 * * * *"), six with seconds first ("*/10 * * * * *"), or @hourly/@daily/@weekly/@monthly/@yearly.`,
    );
  }
  let first: Date | null;
  try {
    first = pattern.nextRun(new Date(0));
  } catch (error) {
    throw new InvalidOptionError(`${where}: the ticks of ${JSON.stringify(cron)} in ${timezone} cannot be computed: ${(error as Error).message}`);
  }
  if (first === null)
    throw new InvalidOptionError(`${where}.cron ${JSON.stringify(cron)} never matches a date (a 30th of February?), so it would never start a run.`);
  const seconds = !cron.startsWith("@") && cron.split(/\s+/).length === 6;
  const longest = MAX_NAME_LENGTH - (seconds ? TICK_SUFFIX.seconds : TICK_SUFFIX.minutes);
  if (name.length > longest) {
    throw new InvalidOptionError(
      `${where}: the workflow name is ${name.length} characters; a scheduled run's id is "<name>@${tickText(first.getTime(), seconds)}" and may have at most ${MAX_NAME_LENGTH}, so the name may have at most ${longest}.`,
    );
  }
  const args = given.args;
  if (typeof args !== "function" && argsSchema !== undefined) checkStaticArgs(where, args, argsSchema);
  const prefix = `${name}@`;
  return {
    cron,
    timezone,
    catchUp: given.catchUp ?? "latest",
    seconds,
    argsFor: (tick) => (typeof args === "function" ? (args as (tick: Date) => unknown)(tick) : args),
    after: (ms) => pattern.nextRun(new Date(ms))?.getTime(),
    // previousRuns counts a tick earlier in the same second as its reference: one ms past `ms`
    // includes a tick at `ms` itself.
    atOrBefore: (ms) => pattern.previousRuns(1, new Date(ms + 1))[0]?.getTime(),
    runId: (tick) => `${prefix}${tickText(tick, seconds)}`,
    tickOf: (runId) => {
      if (!runId.startsWith(prefix)) return undefined;
      const text = runId.slice(prefix.length);
      if (!TICK_TEXT.test(text)) return undefined;
      const tick = Date.parse(text);
      // Only the canonical spelling (a cron changed to or from a seconds field keeps its history).
      return Number.isNaN(tick) || (tickText(tick, false) !== text && tickText(tick, true) !== text) ? undefined : tick;
    },
  };
}

function loadCroner(where: string): typeof import("croner") {
  try {
    return croner();
  } catch (error) {
    throw new InvalidOptionError(
      `${where} cannot be read: steplog reads cron patterns with the croner package, which could not be loaded (${firstLine(error)}). ` +
        `It is one of steplog's dependencies: reinstall (npm install), or, if you bundle your app, leave croner out of the bundle (mark it external) and install it beside it.`,
      { cause: error },
    );
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}

function checkTimezone(where: string, timezone: unknown): void {
  let ok = typeof timezone === "string" && timezone.trim() !== "";
  if (ok) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: timezone as string });
    } catch {
      ok = false;
    }
  }
  if (!ok) throw new InvalidOptionError(`${where}.timezone must be an IANA time zone such as "Europe/Berlin" or "UTC", got ${describe(timezone)}.`);
}

function checkStaticArgs(where: string, args: unknown, schema: StandardSchemaV1): void {
  const result = schema["~standard"].validate(args);
  // A schema that answers asynchronously is asked by start() at each tick instead.
  if (result instanceof Promise) {
    result.catch(() => {});
    return;
  }
  if (result.issues === undefined) return;
  const issues = issueLines(result.issues);
  throw new InvalidOptionError(
    `${where}: the workflow's args schema rejects the args of its scheduled runs (${args === undefined ? "undefined: no schedule.args was given" : describe(args)}): ${issues.join("; ")}. ` +
      `Give schedule.args (a value, or a function of the tick) that the schema accepts.`,
  );
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || typeof value !== "object") return String(value);
  try {
    return JSON.stringify(value).slice(0, 80);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
