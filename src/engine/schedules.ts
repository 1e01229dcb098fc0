/**
 * Schedules: each worker (engine.work) starts the run of every tick of the schedules of its
 * workflows, and engine.schedules() lists them with their next ticks.
 *
 * Exactly one run per tick, across workers and processes, rests on the run's id alone: it is
 * derived from the tick (`<workflow>@<tick, ISO UTC>`, src/workflow/schedule.ts), and start()
 * creates a run only if its id is free, atomically in the store (RUN_EXISTS otherwise). So every
 * worker may try every tick: the first one creates the run, the others get RUN_EXISTS, which
 * here means "started", not a failure. Nothing else is shared or stored for schedules.
 *
 * Which ticks a worker tries:
 * - every tick that comes due while it runs (after it began), in order, at most 100 per look;
 * - once, when it begins, the ticks missed since the last started tick, by `catchUp`: "latest"
 *   the most recent, "all" every one (oldest first, at most 100 per look, the rest at the next
 *   looks), "none" none.
 *
 * "The last started tick" is derived from the store, not kept in it: the greatest tick named by
 * the ids of the newest runs of the workflow (one listing, `limit`ed; the whole workflow's runs
 * only when that page holds no scheduled id). A store's listing is newest first, and a tick's run
 * is created when the tick comes due, so the newest runs hold the newest ticks. That is right in
 * every process because it is read from the same records start() writes, with no clock of any
 * process in it; the worst a stale read can do is try a tick whose run exists (RUN_EXISTS). A
 * counter kept in memory would be right only in the process that kept it, and a stored one would
 * need a schema change and one more write per tick. The store is read only when a worker begins
 * (and while it catches up): the ticks after that are known from the clock.
 *
 * A schedule with no run yet has nothing to catch up: its first worker starts with the next tick.
 */

import { InvalidOptionError, isSteplogError } from "../base/errors.js";
import type { KnownKeys } from "../base/options.js";
import type { RunSummary } from "../operations/views.js";
import type { RunResult } from "../steps/attempt.js";
import type { RunListing, RunStatus, Store } from "../store/types.js";
import type { Workflow } from "../workflow/define-workflow.js";
import type { CatchUp, Schedule } from "../workflow/schedule.js";

/** Ticks a worker tries per schedule per look, at most: a long gap is caught up over several looks. */
export const MAX_TICKS_PER_LOOK = 100;

/** Runs of a workflow read to find its last started tick (newest first). */
const LAST_TICK_PAGE = 50;

export interface DueTick {
  workflow: string;
  /** The tick, in ms since the epoch. */
  tick: number;
  /** The id of its run. */
  id: string;
}

export interface ScheduleView {
  workflow: string;
  cron: string;
  /** The time zone the cron is read in ("UTC" unless the schedule names one). */
  timezone: string;
  catchUp: CatchUp;
  /** The newest tick that has a run, with that run's id and status; null when no tick has one yet. */
  last: { at: string; runId: string; status: RunStatus } | null;
  /** The next ticks after now (on the engine's clock), each with the id its run will have. */
  next: Array<{ at: string; runId: string }>;
}

export interface SchedulesOptions {
  /** How many next ticks to list per schedule. Default 5, at most 100. */
  next?: number;
}

export const SCHEDULES_KEYS: KnownKeys<SchedulesOptions> = { next: true };

/** The newest tick of `schedule` whose run is in the store, with that run's listing. */
export async function lastStarted(store: Store, workflow: string, schedule: Schedule): Promise<{ tick: number; listing: RunListing } | undefined> {
  const newest = (listings: RunListing[]) => {
    let found: { tick: number; listing: RunListing } | undefined;
    for (const listing of listings) {
      const tick = schedule.tickOf(listing.run.id);
      if (tick !== undefined && (found === undefined || tick > found.tick)) found = { tick, listing };
    }
    return found;
  };
  const page = await store.listRuns({ workflow, limit: LAST_TICK_PAGE });
  // A page full of other runs (started by hand) may hide older scheduled ones: read them all, once.
  return newest(page) ?? (page.length < LAST_TICK_PAGE ? undefined : newest(await store.listRuns({ workflow })));
}

interface TickerHost {
  store: Store;
  now(): number;
  /** The workflows this worker has that have a schedule. */
  scheduled(): Array<{ name: string; schedule: Schedule }>;
}

interface ScheduleState {
  schedule: Schedule;
  /** The engine's time when this worker first saw the schedule: ticks before it were missed. */
  since: number;
  /** Ticks at or before this were tried (or skipped by catchUp) by this worker. */
  checkedUpTo: number | undefined;
  /** Real time (Date.now) before which the schedule is not looked at: a failure is tried again after pollMs. */
  pausedUntil: number;
}

/** The ticks one worker is due to try, look by look. */
export class Ticker {
  readonly #host: TickerHost;
  readonly #pollMs: number;
  readonly #states = new Map<string, ScheduleState>();
  readonly #warned = new Set<string>();

  constructor(host: TickerHost, pollMs: number) {
    this.#host = host;
    this.#pollMs = pollMs;
  }

  /**
   * Take every schedule as seen now, when the worker begins (else at its first look): the ticks
   * due from now on are this worker's to try, however long its first look at the store takes.
   */
  begin(): void {
    const now = this.#host.now();
    for (const { name, schedule } of this.#host.scheduled()) this.#state(name, schedule, now);
  }

  /** Up to `limit` ticks to try now, oldest first. Reads the store only when catching up. */
  async due(limit: number): Promise<DueTick[]> {
    const now = this.#host.now();
    const found: Array<{ state: ScheduleState; ticks: DueTick[]; complete: boolean }> = [];
    for (const { name, schedule } of this.#host.scheduled()) {
      const state = this.#state(name, schedule, now);
      if (Date.now() < state.pausedUntil) continue;
      try {
        const { ticks, complete } = await this.#dueOf(name, state, now);
        found.push({ state, ticks, complete });
      } catch (error) {
        state.pausedUntil = Date.now() + this.#pollMs;
        process.emitWarning(
          `steplog worker: could not read the last started tick of workflow ${JSON.stringify(name)}'s schedule (${(error as Error).message}); looking again in ${this.#pollMs} ms.`,
          { code: "STEPLOG_WORKER_POLL_FAILED" },
        );
      }
    }
    const taken = found
      .flatMap((f) => f.ticks)
      .sort((a, b) => a.tick - b.tick)
      .slice(0, limit);
    const takenIds = new Set(taken.map((t) => t.id));
    for (const { state, ticks, complete } of found) {
      const mine = ticks.filter((t) => takenIds.has(t.id));
      // All of them handed out and nothing left before now: this worker is up to date. Otherwise
      // it goes on after the last one handed out (or where it was) at its next look.
      if (complete && mine.length === ticks.length) state.checkedUpTo = Math.max(state.checkedUpTo ?? now, now);
      else if (mine.length > 0) state.checkedUpTo = mine.at(-1)!.tick;
    }
    return taken;
  }

  /** How long until a tick is due, in ms on the engine's clock (0: one is due now); undefined without schedules. */
  msToNext(): number | undefined {
    const now = this.#host.now();
    let soonest: number | undefined;
    for (const state of this.#states.values()) {
      const next = state.checkedUpTo === undefined || state.checkedUpTo < state.since ? now : state.schedule.after(state.checkedUpTo);
      if (next !== undefined && (soonest === undefined || next < soonest)) soonest = next;
    }
    return soonest === undefined ? undefined : Math.max(0, soonest - now);
  }

  /**
   * A tick's start was refused. Refusals that would come again (its args rejected, not
   * serialisable, a schedule.args function that throws) skip the tick, with a warning; anything
   * else (a store that cannot be written just now) is tried again after pollMs. A closed engine
   * says nothing: its worker is stopping.
   */
  failed(tick: DueTick, error: unknown): void {
    if (isSteplogError(error, "ENGINE_CLOSED")) return;
    const lasting = ["ARGS_REJECTED", "INVALID_OPTION", "INVALID_NAME", "VALUE_NOT_SERIALIZABLE", "VALUE_TOO_LARGE", "WORKFLOW_NOT_REGISTERED"];
    const skip = isSteplogError(error) && lasting.includes(error.code);
    const state = this.#states.get(tick.workflow);
    if (!skip && state) {
      state.checkedUpTo = Math.min(state.checkedUpTo ?? tick.tick - 1, tick.tick - 1);
      state.pausedUntil = Date.now() + this.#pollMs;
    }
    const key = `${tick.id}\0${skip}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    process.emitWarning(
      `steplog worker: the run ${JSON.stringify(tick.id)} of workflow ${JSON.stringify(tick.workflow)}'s schedule (tick ${new Date(tick.tick).toISOString()}) was not started: ${(error as Error).message}` +
        (skip ? " That tick is skipped." : ` Trying again in ${this.#pollMs} ms.`),
      { code: "STEPLOG_SCHEDULE_FAILED" },
    );
  }

  #state(name: string, schedule: Schedule, now: number): ScheduleState {
    let state = this.#states.get(name);
    if (!state || state.schedule !== schedule) {
      state = { schedule, since: now, checkedUpTo: undefined, pausedUntil: 0 };
      this.#states.set(name, state);
    }
    return state;
  }

  async #dueOf(name: string, state: ScheduleState, now: number): Promise<{ ticks: DueTick[]; complete: boolean }> {
    const { schedule, since, checkedUpTo } = state;
    // Up to date and no tick since: nothing to read.
    if (checkedUpTo !== undefined && checkedUpTo >= since) {
      const next = schedule.after(checkedUpTo);
      if (next === undefined || next > now) return { ticks: [], complete: true };
    }
    const ticks: number[] = [];
    // Every tick after `from` up to `to`, while there is room in this look; false when out of room.
    const each = (from: number, to: number): boolean => {
      for (let t = schedule.after(from); t !== undefined && t <= to; t = schedule.after(t)) {
        if (ticks.length >= MAX_TICKS_PER_LOOK) return false;
        ticks.push(t);
      }
      return true;
    };
    let complete = true;
    // Ticks missed before this worker began: from the last started one, by catchUp.
    if ((checkedUpTo === undefined || checkedUpTo < since) && schedule.catchUp !== "none") {
      const last = (await lastStarted(this.#host.store, name, schedule))?.tick;
      const lower = last === undefined ? checkedUpTo : Math.max(last, checkedUpTo ?? last);
      if (lower !== undefined && schedule.catchUp === "latest") {
        const latest = schedule.atOrBefore(since);
        if (latest !== undefined && latest > lower) ticks.push(latest);
      } else if (lower !== undefined) {
        complete = each(lower, since);
      }
    }
    // Ticks since it began: every one. (Not bounded below by the last started tick: a worker
    // that came up later may have started a newer tick before this one started an older.)
    if (complete) complete = each(Math.max(checkedUpTo ?? since, since), now);
    return { ticks: ticks.map((tick) => ({ workflow: name, tick, id: schedule.runId(tick) })), complete };
  }
}

/**
 * Start the run of a tick through `start` (the engine's start, with the tick's id): its result,
 * or undefined when the tick's run exists already (another worker started it: that is success).
 */
export async function startTick(workflow: Workflow, tick: DueTick, start: (args: unknown) => Promise<RunResult>): Promise<RunResult | undefined> {
  let args: unknown;
  try {
    args = await workflow.schedule!.argsFor(new Date(tick.tick));
  } catch (error) {
    throw new InvalidOptionError(
      `Workflow ${JSON.stringify(workflow.name)}: schedule.args threw for the tick ${new Date(tick.tick).toISOString()}: ${(error as Error)?.message ?? String(error)}`,
      { runId: tick.id },
    );
  }
  try {
    return await start(args);
  } catch (error) {
    if (isSteplogError(error, "RUN_EXISTS")) return undefined;
    throw error;
  }
}

/** engine.schedules(): each workflow's schedule with its last started tick and its next ticks. */
export async function listSchedules(
  store: Store,
  workflows: Workflow[],
  now: number,
  options: SchedulesOptions,
  summarize: (listing: RunListing) => RunSummary,
): Promise<ScheduleView[]> {
  const count = options.next ?? 5;
  if (!Number.isInteger(count) || count < 0 || count > MAX_TICKS_PER_LOOK) {
    throw new InvalidOptionError(`schedules(): next must be a whole number from 0 to ${MAX_TICKS_PER_LOOK}, got ${String(options.next)}.`);
  }
  const views: ScheduleView[] = [];
  for (const workflow of workflows) {
    const schedule = workflow.schedule;
    if (!schedule) continue;
    const last = await lastStarted(store, workflow.name, schedule);
    const next: ScheduleView["next"] = [];
    for (let t = schedule.after(now); t !== undefined && next.length < count; t = schedule.after(t)) {
      next.push({ at: new Date(t).toISOString(), runId: schedule.runId(t) });
    }
    views.push({
      workflow: workflow.name,
      cron: schedule.cron,
      timezone: schedule.timezone,
      catchUp: schedule.catchUp,
      last: last ? { at: new Date(last.tick).toISOString(), runId: last.listing.run.id, status: summarize(last.listing).status } : null,
      next,
    });
  }
  return views;
}
