/**
 * Leases this process has watched. No clock is trusted across processes: a lease's `expiresAt`
 * was computed on its owner's clock, which may run ahead of this one or behind it. So where a
 * lease is all there is to go by (its owner on another machine, or a pid that cannot be
 * judged), a claimer takes it for expired only once it has itself seen that very lease (the same
 * epoch and heartbeat) go unrenewed for a full lease period, measured on its own monotonic
 * clock. An owner that renews is seen renewing; one that cannot renew stops on its own once a
 * period has passed since its last renewal, which is no later than the first sighting here.
 *
 * Shared by every engine and every copy of this module in the process (a global symbol), like
 * the live-attempt registry.
 */

import type { LeaseRow } from "../store/types.js";

interface Sighting {
  epoch: number;
  heartbeatAt: number;
  /** performance.now() when this process first saw the lease as it is. */
  since: number;
}

const KEY = Symbol.for("steplog.leaseWatch.v1");

function sightings(): Map<string, Sighting> {
  const holder = globalThis as unknown as Record<symbol, Map<string, Sighting> | undefined>;
  return (holder[KEY] ??= new Map());
}

export interface Watched {
  /** How long this process has seen the lease unrenewed, in ms (0 on the first sighting). */
  unrenewedMs: number;
  /** The lease's period: how long its owner gave it (expiresAt − heartbeatAt, both on the owner's clock). */
  periodMs: number;
}

/**
 * The lease's period, from its owner's own two times (so skew-free). One that ran out as it was
 * written (an expiry at or before its heartbeat: steplog never writes one) has none.
 */
export function leasePeriod(lease: Pick<LeaseRow, "expiresAt" | "heartbeatAt">): number {
  const period = lease.expiresAt - lease.heartbeatAt;
  return Number.isFinite(period) ? Math.max(0, period) : 30_000;
}

/** Note a sighting of a held lease of run `runId` in the storage `where`, and say how long it has gone unrenewed here. */
export function watchLease(where: string, lease: LeaseRow, now: () => number = () => performance.now()): Watched {
  const key = `${where}\u0000${lease.runId}`;
  const seen = sightings().get(key);
  const at = now();
  const periodMs = leasePeriod(lease);
  if (seen && seen.epoch === lease.epoch && seen.heartbeatAt === lease.heartbeatAt) return { unrenewedMs: at - seen.since, periodMs };
  sightings().set(key, { epoch: lease.epoch, heartbeatAt: lease.heartbeatAt, since: at });
  return { unrenewedMs: 0, periodMs };
}

/** Forget the sightings of a run (its lease was taken or released by us). */
export function forgetLease(where: string, runId: string): void {
  sightings().delete(`${where}\u0000${runId}`);
}
