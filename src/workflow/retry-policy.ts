/** Per-step retries within one attempt: how many calls, and how long to wait between them. */

import type { RetryOptions } from "./context.js";
import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";

export interface RetryPolicy {
  maxAttempts: number;
  backoffMs: number;
  factor: number;
  maxBackoffMs: number;
  retryIf: (error: unknown, retry: number) => boolean | Promise<boolean>;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 1,
  backoffMs: 1000,
  factor: 2,
  maxBackoffMs: 30_000,
  retryIf: () => true,
};

const RETRY_KEYS: KnownKeys<RetryOptions> = { maxAttempts: true, backoffMs: true, factor: true, maxBackoffMs: true, retryIf: true };

export function retryPolicy(options: RetryOptions | undefined, step: string): RetryPolicy {
  if (options === undefined) return DEFAULT_RETRY;
  checkKnownKeys(`Step ${JSON.stringify(step)}: retry`, options, RETRY_KEYS, { step });
  const policy = { ...DEFAULT_RETRY, ...stripUndefined(options) };
  const bad = (what: string) => new InvalidOptionError(`Step ${JSON.stringify(step)}: retry.${what}.`, { step });
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1)
    throw bad(`maxAttempts must be a whole number ≥ 1 (it counts calls, the first included)`);
  if (!(policy.backoffMs >= 0)) throw bad("backoffMs must be ≥ 0");
  if (!(policy.factor >= 1)) throw bad("factor must be ≥ 1");
  if (!(policy.maxBackoffMs >= 0)) throw bad("maxBackoffMs must be ≥ 0");
  if (typeof policy.retryIf !== "function") throw bad("retryIf must be a function (error, retry) => boolean (or a promise of one)");
  return policy;
}

/** The wait before retry number `retry` (1 for the first retry). */
export function backoffDelay(policy: RetryPolicy, retry: number): number {
  return Math.min(policy.maxBackoffMs, policy.backoffMs * policy.factor ** (retry - 1));
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
