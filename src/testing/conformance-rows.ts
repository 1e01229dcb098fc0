/**
 * The rows the conformance suite writes, and the helpers its cases share: a created run, a
 * claim that takes only a free lease, a lease compared without its age, a LEASE_LOST check.
 * runRow, attemptRow and stepRow are exported (from steplog/testing) for a store's own tests.
 */

import assert from "node:assert/strict";
import { isSteplogError, RunBusyError } from "../base/errors.js";
import type { AttemptRow, Lease, RunRow, StepRow, Store, StoredRun } from "../store/types.js";

/** The time every row of the suite is written at. */
export const NOW = Date.UTC(2030, 0, 1);

export function runRow(id: string, patch: Partial<RunRow> = {}): RunRow {
  return {
    id,
    workflow: "conformance",
    version: "1.0.0",
    args: '{"n":1}',
    status: "running",
    attempts: 1,
    budgetUsed: 1,
    source: null,
    deadline: null,
    value: null,
    error: null,
    waitingFor: null,
    wakeAt: null,
    parent: null,
    concurrencyKey: null,
    rateKey: null,
    priority: 0,
    dedupeKey: null,
    traceContext: null,
    costBudget: null,
    spentUsd: 0,
    spentTokens: 0,
    createdAt: NOW,
    updatedAt: NOW,
    ...patch,
  };
}

export function attemptRow(runId: string, number: number, patch: Partial<AttemptRow> = {}): AttemptRow {
  return {
    runId,
    number,
    host: "conformance-host",
    bootId: "boot",
    pid: 4242,
    processStart: 7,
    startedAt: NOW,
    endedAt: null,
    ending: null,
    fromStep: null,
    forced: false,
    error: null,
    ...patch,
  };
}

export function stepRow(runId: string, seq: number, key: string, patch: Partial<StepRow> = {}): StepRow {
  return {
    runId,
    seq,
    attempt: 1,
    key,
    name: key.replace(/#\d+$/, ""),
    status: "intended",
    effect: "idempotent",
    idempotencyKey: `${runId}:${key}`,
    value: null,
    error: null,
    version: "1.0.0",
    intendedAt: NOW + seq,
    endedAt: null,
    calls: 0,
    resolution: null,
    usage: null,
    position: seq - 1,
    ...patch,
  };
}

/** A run created with runRow(id, patch) and its first attempt; its lease. */
export async function created(store: Store, id: string, patch: Partial<RunRow> = {}, attempt: Partial<AttemptRow> = {}): Promise<Lease> {
  const lease = await store.createRun(runRow(id, patch), attemptRow(id, 1, attempt), { expiresAt: NOW + 30_000, now: NOW });
  assert.ok(!("exists" in lease), `createRun(${id}) found an existing run`);
  return lease as Lease;
}

/**
 * A stored run as compared in these tests: a lease's `ageMs` (how long ago it was written, by a
 * clock a store's claimers share) changes from one read to the next; it is checked to be a
 * non-negative number where a store gives it, then left out.
 */
export function comparable<T extends StoredRun | undefined>(state: T): T {
  if (!state?.lease || !("ageMs" in state.lease)) return state;
  const { ageMs, ...lease } = state.lease;
  assert.ok(typeof ageMs === "number" && ageMs >= 0, `lease.ageMs must be a number of ms ≥ 0, got ${String(ageMs)}`);
  return { ...state, lease };
}

/** A claim that takes the lease only when nobody holds it (as the engine's RUN_BUSY rule would). */
export function takeIfFree(runId: string) {
  return (current: StoredRun) => {
    if (current.lease && current.lease.attempt !== null) {
      return {
        kind: "refuse" as const,
        error: new RunBusyError(runId, { attempt: current.lease.attempt, host: "h", pid: 1, expiresAt: current.lease.expiresAt }),
      };
    }
    const number = current.run.attempts + 1;
    return {
      kind: "take" as const,
      attempt: attemptRow(runId, number),
      run: { attempts: number, status: "running" as const },
      expiresAt: NOW + 60_000,
      now: NOW,
    };
  };
}

export async function refusedWithLeaseLost(write: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(write, (error: unknown) => isSteplogError(error, "LEASE_LOST"), `${what} with a stale fence must be refused with LEASE_LOST`);
}
