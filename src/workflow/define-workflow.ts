/**
 * defineWorkflow binds a name (what a run belongs to), an optional version and args
 * schema, and bounds, to the code of one attempt.
 */

import type { WorkflowContext } from "./context.js";
import { InvalidOptionError } from "../base/errors.js";
import { checkName } from "./names.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { isSchema, type InferInput, type InferOutput, type StandardSchemaV1 } from "./value-schemas.js";
import { makeSchedule, type Schedule, type ScheduleDefinition } from "./schedule.js";
import { makeFlowControl, type ConcurrencyDefinition, type FlowControl, type RateLimitDefinition } from "./flow-control.js";
import { checkBudget, type Budget } from "./budgets.js";

export const DEFAULT_MAX_ATTEMPTS = 10;

/**
 * The args a flow-control key function gets: the schema's output, or (without a schema) what
 * the caller declares, as `run`'s own parameter may be declared.
 */
type KeyArgs<A> = A extends StandardSchemaV1 ? InferOutput<A> : any;

export interface WorkflowDefinition<A extends StandardSchemaV1 | undefined, R> {
  /** A run belongs to this name, not to a file: continue from a moved or copied file. */
  name: string;
  /**
   * Optional. When both the record and the code have one, a major change (under 0.x, a minor
   * one) stops a continue at the first step recorded by the other version.
   */
  version?: string;
  /** Any Standard Schema validator; checked on start and again on every continue. */
  args?: A;
  /** Attempts allowed before the run is dead-lettered. Default 10. */
  maxAttempts?: number;
  /**
   * What a failed attempt does to the world it changed: "keep" (default) keeps everything for a
   * continue; "compensate" runs the saga (engine.compensate) at once, unless past the pivot.
   */
  onFailure?: "keep" | "compensate";
  /** Let engine.work() pick up this workflow's interrupted runs by itself. Default false. */
  autoResume?: boolean;
  /**
   * Every run's deadline, this many ms after its start, unless start gives its own: it holds
   * across attempts and parks (a run waiting past it is ended timed-out by a worker).
   */
  timeoutMs?: number;
  /**
   * What a continue does when it hands records back in another order than they were recorded
   * in (a loop over a list that was reordered): "warn" (default: a STEPLOG_ORDER_CHANGED process
   * warning, once per attempt) or "stop" (the attempt stops there, ORDER_CHANGED).
   */
  onOrderChange?: "warn" | "stop";
  /**
   * What a continue does when a step's settled record was made for another `input` than the code
   * gives it now: "stop" (default: the attempt stops before it, STEP_INPUT_CHANGED) or "redo"
   * (the step runs again with the new input, a start point; an irreversible step still needs
   * `redo` consent, REDO_IRREVERSIBLE).
   */
  onInputChange?: "stop" | "redo";
  /**
   * Start a run on every tick of a cron pattern: every worker (engine.work(), steplog work) on a
   * store starts the tick's run, exactly one per tick, with the id `<name>@<tick, ISO UTC>`.
   * See docs/schedules.md.
   */
  schedule?: ScheduleDefinition<A extends StandardSchemaV1 ? InferInput<A> : unknown>;
  /**
   * At most `limit` attempts of this workflow's runs with one key run at once, across every
   * worker and process on the store; the others wait for their turn (docs/waiting.md#flow-control).
   */
  concurrency?: ConcurrencyDefinition<KeyArgs<A>>;
  /** At most `limit` attempts start per `periodMs` among runs with one key; the others wait for their turn. */
  rateLimit?: RateLimitDefinition<KeyArgs<A>>;
  /** Among runs that are due, higher runs first (a worker's order). A number, or a function of the args. Default 0. */
  priority?: number | ((args: KeyArgs<A>) => number);
  /**
   * Every run's spending budget, unless start gives its own: a step about to start once the
   * usage its steps recorded (`costUsd`; input and output tokens) has reached it parks the run
   * (`waitingFor.kind: "budget"`) until engine.raiseBudget. See docs/budgets.md.
   */
  budget?: Budget;
  run(ctx: WorkflowContext, args: A extends StandardSchemaV1 ? InferOutput<A> : unknown): Promise<R>;
}

export interface Workflow<Args = unknown, R = unknown> {
  readonly kind: "steplog.workflow";
  readonly name: string;
  readonly version: string | undefined;
  readonly args: StandardSchemaV1 | undefined;
  readonly maxAttempts: number;
  readonly onFailure: "keep" | "compensate";
  readonly autoResume: boolean;
  readonly timeoutMs: number | undefined;
  readonly onOrderChange: "warn" | "stop";
  readonly onInputChange: "stop" | "redo";
  /** Its schedule, checked, when it has one: workers start a run on each tick. */
  readonly schedule: Schedule | undefined;
  /** Its concurrency and rate limits and priority, checked. */
  readonly flow: FlowControl;
  /** Its runs' spending budget, checked, when it has one. */
  readonly budget: Budget | undefined;
  readonly run: (ctx: WorkflowContext, args: never) => Promise<R>;
  /** Type-only: the args `start` takes. */
  readonly __args?: Args;
}

export type WorkflowArgs<W> = W extends Workflow<infer A, unknown> ? A : never;
export type WorkflowResult<W> = W extends Workflow<unknown, infer R> ? R : never;

const DEFINITION_KEYS: KnownKeys<WorkflowDefinition<undefined, unknown>> = {
  name: true,
  version: true,
  args: true,
  maxAttempts: true,
  onFailure: true,
  autoResume: true,
  timeoutMs: true,
  onOrderChange: true,
  onInputChange: true,
  schedule: true,
  concurrency: true,
  rateLimit: true,
  priority: true,
  budget: true,
  run: true,
};

export function defineWorkflow<A extends StandardSchemaV1 | undefined = undefined, R = unknown>(
  definition: WorkflowDefinition<A, R>,
): Workflow<A extends StandardSchemaV1 ? InferInput<A> : unknown, R> {
  checkName("workflow name", definition?.name);
  checkKnownKeys(`defineWorkflow(${JSON.stringify(definition.name)})`, definition, DEFINITION_KEYS);
  const maxAttempts = definition.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: maxAttempts must be a whole number ≥ 1, got ${String(definition.maxAttempts)}.`);
  }
  if (definition.args !== undefined && !isSchema(definition.args)) {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: args must be a Standard Schema validator (a zod schema, say).`);
  }
  if (definition.onFailure !== undefined && definition.onFailure !== "keep" && definition.onFailure !== "compensate") {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: onFailure must be "keep" or "compensate".`);
  }
  if (definition.onOrderChange !== undefined && definition.onOrderChange !== "warn" && definition.onOrderChange !== "stop") {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: onOrderChange must be "warn" or "stop".`);
  }
  if (definition.onInputChange !== undefined && definition.onInputChange !== "stop" && definition.onInputChange !== "redo") {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: onInputChange must be "stop" or "redo".`);
  }
  if (definition.timeoutMs !== undefined && !(typeof definition.timeoutMs === "number" && Number.isFinite(definition.timeoutMs) && definition.timeoutMs > 0)) {
    throw new InvalidOptionError(
      `Workflow ${JSON.stringify(definition.name)}: timeoutMs must be a number of milliseconds > 0, got ${String(definition.timeoutMs)}.`,
    );
  }
  if (typeof definition.run !== "function") {
    throw new InvalidOptionError(`Workflow ${JSON.stringify(definition.name)}: run must be a function (ctx, args) => Promise<result>.`);
  }
  const schedule = makeSchedule(definition.name, definition.schedule, definition.args);
  const flow = makeFlowControl(definition.name, definition);
  const budget = definition.budget === undefined ? undefined : checkBudget(`Workflow ${JSON.stringify(definition.name)}`, definition.budget);
  return {
    kind: "steplog.workflow",
    name: definition.name,
    version: definition.version,
    args: definition.args,
    maxAttempts,
    onFailure: definition.onFailure ?? "keep",
    autoResume: definition.autoResume === true,
    timeoutMs: definition.timeoutMs,
    onOrderChange: definition.onOrderChange ?? "warn",
    onInputChange: definition.onInputChange ?? "stop",
    schedule,
    flow,
    budget,
    run: definition.run as unknown as (ctx: WorkflowContext, args: never) => Promise<R>,
  };
}

export function isWorkflow(value: unknown): value is Workflow {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "steplog.workflow";
}
