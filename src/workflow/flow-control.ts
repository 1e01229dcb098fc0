/**
 * A workflow's flow control: `defineWorkflow({ concurrency, rateLimit, priority })`, checked once
 * at defineWorkflow (INVALID_OPTION), and the keys a run of it is stored with. The limits are
 * held by the store, in the claim's transaction (store/types.ts FlowQuery), so they hold for
 * every worker and process sharing the store; this file only says what they are.
 *
 * Keys are per workflow: a run's concurrency key is `<workflow>` (the whole workflow) or
 * `<workflow>:<key(args)>`, likewise its rate key.
 */

import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import { MAX_NAME_LENGTH } from "./names.js";

export interface ConcurrencyDefinition<Args = unknown> {
  /** Attempts of runs with one key that may run at once (every worker, every process). */
  limit: number;
  /** The key, from the run's args (say, the user's id); default: one key for the whole workflow. */
  key?: (args: Args) => string;
}

export interface RateLimitDefinition<Args = unknown> {
  /** Attempts that may start per `periodMs` among runs with one key. */
  limit: number;
  periodMs: number;
  /** The key, from the run's args; default: one key for the whole workflow. */
  key?: (args: Args) => string;
}

export interface FlowControl {
  readonly concurrency: { readonly limit: number; readonly key: ((args: unknown) => string) | undefined } | undefined;
  readonly rateLimit: { readonly limit: number; readonly periodMs: number; readonly key: ((args: unknown) => string) | undefined } | undefined;
  /** A number, or a function of the args; higher runs first among due runs. Default 0. */
  readonly priority: number | ((args: unknown) => number) | undefined;
}

const CONCURRENCY_KEYS: KnownKeys<ConcurrencyDefinition> = { limit: true, key: true };
const RATE_KEYS: KnownKeys<RateLimitDefinition> = { limit: true, periodMs: true, key: true };

/** The checked flow control of workflow `name`. */
export function makeFlowControl(name: string, definition: { concurrency?: unknown; rateLimit?: unknown; priority?: unknown }): FlowControl {
  const where = `defineWorkflow(${JSON.stringify(name)})`;
  const wholeNumber = (value: unknown, what: string) => {
    if (!(typeof value === "number" && Number.isInteger(value) && value >= 1)) {
      throw new InvalidOptionError(`${where}: ${what} must be a whole number ≥ 1, got ${String(value)}.`);
    }
    return value;
  };
  const keyFn = (value: unknown, what: string) => {
    if (value !== undefined && typeof value !== "function")
      throw new InvalidOptionError(`${where}: ${what} must be a function of the args returning a string.`);
    return value as ((args: unknown) => string) | undefined;
  };
  const object = (value: unknown, what: string, example: string): Record<string, unknown> => {
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new InvalidOptionError(`${where}: ${what} must be an object such as ${example}.`);
    return value as Record<string, unknown>;
  };
  let concurrency: FlowControl["concurrency"];
  if (definition.concurrency !== undefined) {
    const given = object(definition.concurrency, "concurrency", "{ limit: 1, key: (args) => args.userId }");
    checkKnownKeys(`${where}: concurrency`, given, CONCURRENCY_KEYS);
    concurrency = { limit: wholeNumber(given.limit, "concurrency.limit"), key: keyFn(given.key, "concurrency.key") };
  }
  let rateLimit: FlowControl["rateLimit"];
  if (definition.rateLimit !== undefined) {
    const given = object(definition.rateLimit, "rateLimit", "{ limit: 10, periodMs: 60_000 }");
    checkKnownKeys(`${where}: rateLimit`, given, RATE_KEYS);
    rateLimit = {
      limit: wholeNumber(given.limit, "rateLimit.limit"),
      periodMs: wholeNumber(given.periodMs, "rateLimit.periodMs"),
      key: keyFn(given.key, "rateLimit.key"),
    };
  }
  const priority = definition.priority;
  if (priority !== undefined && typeof priority !== "function" && !(typeof priority === "number" && Number.isSafeInteger(priority))) {
    throw new InvalidOptionError(
      `${where}: priority must be a whole number (higher runs first) or a function of the args returning one, got ${String(priority)}.`,
    );
  }
  return { concurrency, rateLimit, priority: priority as FlowControl["priority"] };
}

/** Whether runs of the workflow wait for their turn: it has a concurrency or a rate limit. */
export function queues(flow: FlowControl): boolean {
  return flow.concurrency !== undefined || flow.rateLimit !== undefined;
}

/** The keys and priority a new run of `workflow` is stored with (a key function that throws or answers a non-string is INVALID_OPTION). */
export function flowColumns(
  workflow: string,
  flow: FlowControl,
  args: unknown,
  given: { priority?: number | undefined },
): { concurrencyKey: string | null; rateKey: string | null; priority: number } {
  const keyOf = (fn: ((args: unknown) => string) | undefined, what: string): string => {
    if (!fn) return workflow;
    let key: unknown;
    try {
      key = fn(args);
    } catch (error) {
      throw new InvalidOptionError(`Workflow ${JSON.stringify(workflow)}: ${what} threw: ${(error as Error)?.message ?? String(error)}. Nothing was recorded.`);
    }
    if (typeof key !== "string" || key === "" || key.length > MAX_NAME_LENGTH) {
      throw new InvalidOptionError(
        `Workflow ${JSON.stringify(workflow)}: ${what} must return a string of 1 to ${MAX_NAME_LENGTH} characters, got ${typeof key === "string" ? JSON.stringify(key.slice(0, 40)) : String(key)}. Nothing was recorded.`,
      );
    }
    return `${workflow}:${key}`;
  };
  let priority = given.priority ?? 0;
  if (given.priority === undefined && flow.priority !== undefined) {
    priority = typeof flow.priority === "function" ? flow.priority(args) : flow.priority;
    if (!Number.isSafeInteger(priority)) {
      throw new InvalidOptionError(
        `Workflow ${JSON.stringify(workflow)}: priority(args) must return a whole number, got ${String(priority)}. Nothing was recorded.`,
      );
    }
  }
  return {
    concurrencyKey: flow.concurrency ? keyOf(flow.concurrency.key, "concurrency.key(args)") : null,
    rateKey: flow.rateLimit ? keyOf(flow.rateLimit.key, "rateLimit.key(args)") : null,
    priority,
  };
}
