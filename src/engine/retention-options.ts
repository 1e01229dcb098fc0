/**
 * createEngine's `retention` option, checked: a length of time per ended status, and how often
 * workers apply it (retention.ts applies it).
 */

import { parseDuration } from "../base/duration.js";
import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import type { RunStatus } from "../store/types.js";
import { checkPruneStatus, PRUNE_STATUSES, type PruneStatus } from "./prune-options.js";

/** How long runs that ended in each status are kept ("30d", "12h", or ms), and how often a worker applies it. */
export type RetentionOptions = { [S in PruneStatus]?: string | number } & {
  /** How often each worker applies the retention (it begins with it). Default "1h". */
  every?: string | number;
};

export interface Retention {
  rules: Array<{ status: PruneStatus; keepMs: number }>;
  everyMs: number;
}

const RETENTION_KEYS: KnownKeys<RetentionOptions> = Object.fromEntries([...PRUNE_STATUSES, "every"].map((k) => [k, true])) as KnownKeys<RetentionOptions>;
const NOT_ENDED: readonly RunStatus[] = ["running", "waiting", "interrupted", "ready"];

export function checkRetention(value: RetentionOptions | undefined): Retention | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) if (NOT_ENDED.includes(key as RunStatus)) checkPruneStatus(`createEngine: retention`, key);
  }
  checkKnownKeys("createEngine: retention", value, RETENTION_KEYS);
  const rules: Retention["rules"] = [];
  for (const status of PRUNE_STATUSES) {
    if (value[status] !== undefined) rules.push({ status, keepMs: parseDuration(`createEngine: retention.${status}`, value[status]) });
  }
  if (rules.length === 0) {
    throw new InvalidOptionError(
      `createEngine: retention names no status; keep runs of some for a time, such as retention: { completed: "30d", failed: "90d" }.`,
    );
  }
  const everyMs = parseDuration("createEngine: retention.every", value.every ?? "1h");
  if (everyMs < 10) throw new InvalidOptionError(`createEngine: retention.every must be at least 10 ms, got ${JSON.stringify(value.every)}.`);
  return { rules, everyMs };
}
