/**
 * The attempt's call order, as the planner (plan.ts) reads it: the records the attempt started
 * from and each key's latest row, the keys entered so far and their positions, the start point
 * and the steps launched beside it, and the records handed back. The door (door.ts) and the
 * hand-back (hand-back.ts) move it on through its methods.
 */

import { OrderChangedError, type SteplogError } from "../base/errors.js";
import type { StepRow, StoredRun } from "../store/types.js";
import { checkName } from "../workflow/names.js";
import type { AttemptPlan } from "./attempt-plan.js";
import type { Plan, PlanState } from "./plan.js";

/**
 * An empty set of step keys, shared: most attempts have no handled failures and no keys to redo
 * or reuse (perf: an empty Set held per run in flight is a table the collector copies).
 */
export const NO_KEYS: ReadonlySet<string> = new Set();

/** What the order needs from the rest of the attempt. */
export interface OrderContext {
  runId: string;
  attempt: number;
  stored: StoredRun;
  plan: AttemptPlan;
  /** The workflow's onOrderChange: a record handed back out of order warns, or stops the attempt. */
  onOrderChange: "warn" | "stop" | undefined;
  /** Ends the attempt with `error` and throws it (the attempt's ending). */
  stop: (error: SteplogError) => never;
}

/** The order as its own methods write it (outside, every field is read-only). */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Its fields are read-only to everyone else: the methods below move it on. perf: plain fields,
 * not getters over private ones (the planner reads them on every call, often from code V8 has
 * not optimized yet, where each getter is a call).
 */
export class CallOrder implements PlanState {
  readonly runId: string;
  readonly attempt: number;
  readonly mode: AttemptPlan["mode"];
  readonly fromStep: string | undefined;
  readonly redo: ReadonlySet<string>;
  readonly reuse: ReadonlySet<string>;
  readonly values: Record<string, unknown> | undefined;
  /** Whether the start point has been reached: before it records are handed back, from it steps run. */
  readonly started: boolean = false;
  /**
   * The implicit start point while it is unsettled and no other step has run anew: steps entered
   * meanwhile were launched beside it (Promise.all, an SDK's parallel tool calls), so they cannot
   * have used its value, and their succeeded records are reused rather than run again.
   */
  readonly siblingsOf: string | undefined = undefined;
  /** The newest attempt whose record this attempt has handed back so far (a sibling's older record is not reused). */
  readonly newestReused: number = 0;
  /** The last key entered, for a stop's or a cancel's message. */
  readonly lastEntered: string | undefined = undefined;
  /** Calls entered so far: the next one's position in this attempt's call order. */
  readonly entered: number = 0;
  /** The keys handed back: the attempt's ending records them. */
  readonly reused: string[] = [];
  /** Keys whose current row is a failure the workflow handled: thrown again, not redone (handled-failures.ts). */
  readonly handled: ReadonlySet<string> = NO_KEYS;
  /** The step the last attempt stopped before with REDO_IRREVERSIBLE: a start point of this one too. */
  readonly carriedStart: string | undefined = undefined;
  readonly #context: OrderContext;
  /**
   * The latest row of each step key: the records the attempt started from, and the rows it has
   * written since, except a step that succeeded in this attempt (no key is entered twice in one
   * attempt, so its row is not read again) and a call still under way that had no earlier record
   * (its row comes in with its outcome). Made for the first row kept.
   */
  #latest: Map<string, StepRow> | undefined = undefined;
  /** Steps entered so far by name: a box a name, counted up in place. */
  readonly #keyCounts = new Map<string, { entered: number }>();
  /** The handed-back record recorded furthest along so far, to see records handed back out of order. */
  #furthest: { key: string; position: number } | undefined = undefined;
  #orderChangeSeen = false;
  #repeated: Set<string> | undefined = undefined;

  constructor(context: OrderContext) {
    this.runId = context.runId;
    this.attempt = context.attempt;
    const { plan } = context;
    this.mode = plan.mode;
    this.fromStep = plan.fromStep;
    this.redo = plan.redo;
    this.reuse = plan.reuse;
    this.values = plan.values;
    this.#context = context;
    for (const row of context.stored.steps) this.keepLatest(row);
  }

  /** Before the code runs: the failures it handled, and the step the last attempt stopped before (REDO_IRREVERSIBLE). */
  startFrom(handled: ReadonlySet<string>, carriedStart: string | undefined): void {
    const self = this as Writable<CallOrder>;
    self.handled = handled;
    self.carriedStart = carriedStart;
  }

  /** A key enters: its position in the call order. */
  enter(key: string): number {
    const self = this as Writable<CallOrder>;
    self.lastEntered = key;
    return self.entered++;
  }

  /** The plan took effect: `started` from now on, and the sibling window closed if it said so. */
  follow(plan: Plan): void {
    const self = this as Writable<CallOrder>;
    self.started = plan.started;
    if (plan.siblings === "close") self.siblingsOf = undefined;
  }

  /** Steps entered while `key` (the start point) is unsettled were launched beside it. */
  openSiblings(key: string): void {
    (this as Writable<CallOrder>).siblingsOf = key;
  }

  /** The start point `key` settled: steps entered from now on were not launched beside it. */
  closeSiblingsOf(key: string): void {
    if (this.siblingsOf === key) (this as Writable<CallOrder>).siblingsOf = undefined;
  }

  /** A step runs anew: unless it is the start point itself, what follows may depend on its new value. */
  ranAnew(key: string): void {
    if (this.siblingsOf !== key) (this as Writable<CallOrder>).siblingsOf = undefined;
  }

  /** A record handed back instead of a call (steps and waits). */
  noteReused(key: string, record: StepRow): void {
    if (record.attempt > this.newestReused) (this as Writable<CallOrder>).newestReused = record.attempt;
    this.reused.push(key);
  }

  /** The key's latest row, if it has one (a key is hashed only when there are rows to look in). */
  latestRow(key: string): StepRow | undefined {
    const latest = this.#latest;
    return latest === undefined || latest.size === 0 ? undefined : latest.get(key);
  }

  /** Make `row` its key's latest row. */
  keepLatest(row: StepRow): void {
    (this.#latest ??= new Map()).set(row.key, row);
  }

  /** Make `row` its key's latest row if the key has one. */
  replaceLatest(row: StepRow): void {
    if (this.latestRow(row.key) !== undefined) this.#latest!.set(row.key, row);
  }

  /** Forget a key's latest row (a step that succeeded in this attempt: nothing reads it again). */
  dropLatest(key: string): void {
    this.#latest?.delete(key);
  }

  /** The next key for a step name in call order: name, name#2, … (a name is checked the first time). */
  nextKey(name: string): string {
    const count = this.#keyCounts.get(name);
    if (count === undefined) {
      checkName("step name", name);
      this.#keyCounts.set(name, { entered: 1 });
      return name;
    }
    return `${name}#${++count.entered}`;
  }

  /** Whether a step of this name was entered in this attempt. */
  hasEntered(name: string): boolean {
    return this.#keyCounts.has(name);
  }

  /** Recorded step keys this attempt has not entered (so far). */
  notReached(): string[] {
    const reached = (key: string) => {
      const hash = key.lastIndexOf("#");
      const name = hash === -1 ? key : key.slice(0, hash);
      const n = hash === -1 ? 1 : Number(key.slice(hash + 1));
      return (this.#keyCounts.get(name)?.entered ?? 0) >= n;
    };
    return [...new Set(this.#context.stored.steps.map((s) => s.key))].filter((key) => !reached(key));
  }

  /**
   * A record is handed back: if it was recorded at an earlier position than one handed back
   * before it, the code enters its steps in another order than when they were recorded (a
   * reordered list: a key may now hold another item's record). Warn once, or stop.
   */
  checkOrder(key: string, record: StepRow): void {
    const position = record.position;
    if (position === null || position === undefined) return;
    const furthest = this.#furthest;
    if (furthest === undefined || position > furthest.position) {
      this.#furthest = { key, position };
      return;
    }
    if (position === furthest.position || this.#orderChangeSeen) return;
    // Keys of a name used once (`greet:${user.id}`) hold their own item whatever the order; only
    // numbered keys (fetch, fetch#2, … in call order) can hand one item's record to another.
    if (!this.#repeatedName(key) && !this.#repeatedName(furthest.key)) return;
    this.#orderChangeSeen = true;
    const name = record.name;
    // Redo from the first step of that name this attempt entered: its record may be another item's too.
    const redoFrom = this.hasEntered(name) ? name : key;
    if (this.#context.onOrderChange === "stop") this.#context.stop(new OrderChangedError(this.runId, key, furthest.key, redoFrom));
    process.emitWarning(
      `steplog: run ${JSON.stringify(this.runId)}, attempt ${this.attempt} handed back step ${JSON.stringify(key)} (recorded at position ${position}) after ${JSON.stringify(furthest.key)} (position ${furthest.position}): ` +
        `the code enters its steps in another order than when they were recorded, and records are matched by key, so one may hold another item's value. ` +
        `Name such steps after their item, redo them with engine.continue(${JSON.stringify(this.runId)}, { fromStep: ${JSON.stringify(redoFrom)} }), or set onOrderChange: "stop" on the workflow.`,
      { code: "STEPLOG_ORDER_CHANGED" },
    );
  }

  /** True when the key's name has more than one key in the records (name, name#2, …). */
  #repeatedName(key: string): boolean {
    if (!this.#repeated) {
      const keysOf = new Map<string, Set<string>>();
      for (const row of this.#context.stored.steps) keysOf.set(row.name, (keysOf.get(row.name) ?? new Set()).add(row.key));
      this.#repeated = new Set([...keysOf].filter(([, keys]) => keys.size > 1).map(([name]) => name));
    }
    const hash = key.lastIndexOf("#");
    return hash !== -1 || this.#repeated.has(key);
  }
}
