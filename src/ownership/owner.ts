/**
 * Who owns an attempt, and whether that owner is gone. The rule is deliberately
 * conservative: a pid alone never proves death or life.
 *
 * An owner is gone (see judgeOwner) when
 * - it ran in this pid space (same host, boot and pid namespace) and its pid is dead, or now
 *   belongs to a process with another start time, or
 * - it is this very thread of this process and no attempt in it holds the run any more, or
 * - it cannot be seen from here and its lease went unrenewed for a full period, by a clock that
 *   is not compared with the owner's (the epoch, not a clock, keeps a late writer out).
 * A live pid whose start time cannot be read falls back to its lease, and so does another
 * worker thread of this process (its attempts are in its own registry).
 *
 * The recorded `bootId` says where a pid means something: the kernel's boot id, then
 * ` pidns:<inode>` (two containers on one kernel with one host name see different processes
 * behind one pid), then ` thread:<id>` for a worker thread. Rows written before either suffix
 * compare as another pid space: their owners are judged by their leases alone.
 */

import fs from "node:fs";
import os from "node:os";
import { onFirstUse } from "../base/on-first-use.js";
import { leasePeriod, type Watched } from "./lease-watch.js";
import type { LeaseRow, OwnerRow } from "../store/types.js";

/** node:worker_threads, for this thread's id: loaded when this process first owns an attempt, not at import. */
const workerThreads = onFirstUse<typeof import("node:worker_threads")>("node:worker_threads");

function readBootId(): string | null {
  try {
    return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}

interface ProcStat {
  state: string;
  startTime: number;
}

/** Fields of /proc/<pid>/stat after the command name (which may itself hold spaces and parens). */
function readProcStat(pid: number): ProcStat | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    // Field 3 is the state; field 22 the start time in clock ticks since boot.
    const startTime = Number(fields[19]);
    return { state: fields[0] ?? "?", startTime: Number.isFinite(startTime) ? startTime : Number.NaN };
  } catch {
    return null;
  }
}

/** The pid namespace's inode, where /proc says it. */
function readPidNamespace(): string | null {
  try {
    return /\[(\d+)\]/.exec(fs.readlinkSync("/proc/self/ns/pid"))?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * The recorded bootId (see the top of this file): where this process's pids mean something, and
 * which thread it is. Without a boot id (not Linux) the thread is still recorded.
 */
export function scopeOf(boot: string | null, pidNamespace: string | null, thread: number): string | null {
  const space = boot === null ? "" : `${boot}${pidNamespace === null ? "" : ` pidns:${pidNamespace}`}`;
  const scope = `${space}${thread === 0 ? "" : ` thread:${thread}`}`;
  return scope === "" ? null : scope;
}

/** A recorded bootId split into its pid space (null: unknown) and its thread (0: the main thread). */
export function parseScope(bootId: string | null): { space: string | null; thread: number } {
  if (bootId === null) return { space: null, thread: 0 };
  const at = bootId.lastIndexOf(" thread:");
  if (at === -1) return { space: bootId, thread: 0 };
  return { space: bootId.slice(0, at) || null, thread: Number(bootId.slice(at + " thread:".length)) };
}

let self: OwnerRow | undefined;

/** This process (and thread), as an attempt's owner. */
export function currentOwner(): OwnerRow {
  if (!self) {
    const stat = readProcStat(process.pid);
    self = {
      host: os.hostname(),
      bootId: scopeOf(readBootId(), readPidNamespace(), workerThreads().threadId),
      pid: process.pid,
      processStart: stat && Number.isFinite(stat.startTime) ? stat.startTime : null,
    };
  }
  return self;
}

/** `stopped`: alive but frozen (SIGSTOP, a debugger's stop): it cannot renew, so its lease decides. */
export type Liveness = "alive" | "stopped" | "dead" | "other-process" | "unknown";

/** Whether a pid on this machine is still the process that started at `processStart`. */
export function pidLiveness(pid: number, processStart: number | null): Liveness {
  let exists = true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    exists = (error as NodeJS.ErrnoException).code === "EPERM";
  }
  if (!exists) return "dead";
  const stat = readProcStat(pid);
  if (stat?.state === "Z" || stat?.state === "X") return "dead";
  if (stat === null || processStart === null || !Number.isFinite(stat.startTime)) return "unknown";
  if (stat.startTime !== processStart) return "other-process";
  return stat.state === "T" || stat.state === "t" ? "stopped" : "alive";
}

export interface OwnerVerdict {
  gone: boolean;
  why: string;
  /**
   * Not gone, but judged by its lease alone: it will count as gone if its lease stays unrenewed
   * this many ms more (a claimer may wait that long and look again). Absent when the owner is
   * known to be alive.
   */
  decidedInMs?: number;
}

/** What judging an owner needs from the process doing it. */
export interface OwnerJudge {
  /** Whether an attempt in this process still holds the run (the process-wide registry). */
  isHeldHere(): boolean;
  /** This process's watch of the lease: how long it has seen it unrenewed (lease-watch.ts). */
  watch(lease: LeaseRow): Watched;
}

/**
 * Whether the owner of a lease is gone. No clock is compared across processes: a process whose
 * clock runs ahead must not take a live lease, nor one whose clock lags lose its own.
 * - This very thread of this process: gone when no attempt in it holds the run any more.
 * - The same pid space (host, boot, pid namespace): the pid decides. Alive with its recorded
 *   start time, it holds the run whatever its lease says; dead, or another process's now, it is
 *   gone. A pid that is stopped (frozen: it cannot renew), or whose start time cannot be read,
 *   falls back to the lease.
 * - Otherwise (another machine, boot, container or worker thread): the lease, judged by the store's own
 *   clock where it has one every claimer shares (Postgres: the server's), else by this process
 *   having watched it go unrenewed for a full lease period on its own monotonic clock.
 */
export function judgeOwner(owner: OwnerRow, lease: LeaseRow, judge: OwnerJudge): OwnerVerdict {
  if (lease.attempt === null) return { gone: true, why: "the lease was released" };
  const me = currentOwner();
  const theirs = parseScope(owner.bootId);
  const mine = parseScope(me.bootId);
  const samePidSpace = owner.host === me.host && theirs.space === mine.space;
  const sameProcess = samePidSpace && owner.pid === me.pid && owner.processStart === me.processStart;
  if (sameProcess && theirs.thread === mine.thread) {
    if (!judge.isHeldHere()) return { gone: true, why: `no attempt in this process (pid ${me.pid}) holds it any more` };
    return { gone: false, why: `an attempt in this process (pid ${me.pid}) holds it` };
  }
  if (sameProcess) return byLease(lease, judge, `worker thread ${theirs.thread} of this process (pid ${me.pid})`);
  if (samePidSpace) {
    switch (pidLiveness(owner.pid, owner.processStart)) {
      case "dead":
        return { gone: true, why: `process ${owner.pid} on ${owner.host} is gone` };
      case "other-process":
        return { gone: true, why: `pid ${owner.pid} now belongs to another process` };
      case "alive":
        return { gone: false, why: `process ${owner.pid} on ${owner.host} is alive` };
      case "stopped":
        return byLease(lease, judge, `process ${owner.pid} on ${owner.host}, which is stopped (frozen),`);
      default:
        return byLease(lease, judge, `process ${owner.pid} on ${owner.host} (its start time cannot be read)`);
    }
  }
  // Another boot of "this" host is judged by its lease too: two machines may share a host name.
  const where = owner.host === me.host ? `another boot or pid namespace (container) on ${owner.host}` : `another machine (${owner.host})`;
  return byLease(lease, judge, where);
}

/** An owner this process cannot see: its lease decides, without comparing clocks. */
function byLease(lease: LeaseRow, judge: OwnerJudge, who: string): OwnerVerdict {
  const period = leasePeriod(lease);
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  if (period === 0) return { gone: true, why: "its lease expired as it was written (it was given no time)" };
  if (typeof lease.ageMs === "number" && Number.isFinite(lease.ageMs)) {
    if (lease.ageMs >= period)
      return { gone: true, why: `its lease expired: unrenewed for ${seconds(lease.ageMs)} by the database server's clock (it lasts ${seconds(period)})` };
    return { gone: false, why: `${who} holds a lease renewed ${seconds(lease.ageMs)} ago by the database server's clock`, decidedInMs: period - lease.ageMs };
  }
  const watched = judge.watch(lease);
  if (watched.unrenewedMs >= watched.periodMs) {
    return {
      gone: true,
      why: `its lease expired: this process watched it go unrenewed for ${seconds(watched.unrenewedMs)} (it lasts ${seconds(watched.periodMs)})`,
    };
  }
  return {
    gone: false,
    why: `${who} holds a lease that this process has not yet seen go unrenewed for a full lease period (${seconds(watched.periodMs)})`,
    decidedInMs: watched.periodMs - watched.unrenewedMs,
  };
}
