/**
 * Who owns an attempt, and whether that owner is gone. The rule is deliberately
 * conservative: a pid alone never proves death or life.
 *
 * An owner is gone when
 * - its lease has expired (any host; the epoch, not the clock, keeps a late writer out), or
 * - it ran in this pid space (same host, boot and pid namespace) and its pid is dead, or now
 *   belongs to a process with another start time, or
 * - it is this very thread of this process and no attempt in it holds the run any more.
 * A live pid whose start time cannot be read counts as alive until the lease expires, and so
 * does another worker thread of this process (its attempts are in its own registry).
 *
 * The recorded `bootId` says where a pid means something: the kernel's boot id, then
 * ` pidns:<inode>` (two containers on one kernel with one host name see different processes
 * behind one pid), then ` thread:<id>` for a worker thread. Rows written before either suffix
 * compare as another pid space: their owners are judged by their leases alone.
 */

import fs from "node:fs";
import os from "node:os";
import { threadId } from "node:worker_threads";
import type { LeaseRow, OwnerRow } from "./store/types.js";

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
      bootId: scopeOf(readBootId(), readPidNamespace(), threadId),
      pid: process.pid,
      processStart: stat && Number.isFinite(stat.startTime) ? stat.startTime : null,
    };
  }
  return self;
}

export type Liveness = "alive" | "dead" | "other-process" | "unknown";

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
  return stat.startTime === processStart ? "alive" : "other-process";
}

export interface OwnerVerdict {
  gone: boolean;
  why: string;
}

/**
 * @param isHeldHere whether an attempt in this process still holds the run (the process-wide registry)
 */
export function judgeOwner(owner: OwnerRow, lease: LeaseRow, now: number, isHeldHere: () => boolean): OwnerVerdict {
  if (lease.attempt === null) return { gone: true, why: "the lease was released" };
  const me = currentOwner();
  const theirs = parseScope(owner.bootId);
  const mine = parseScope(me.bootId);
  const samePidSpace = owner.host === me.host && theirs.space === mine.space;
  const sameProcess = samePidSpace && owner.pid === me.pid && owner.processStart === me.processStart;
  if (sameProcess && theirs.thread === mine.thread) {
    if (!isHeldHere()) return { gone: true, why: `no attempt in this process (pid ${me.pid}) holds it any more` };
    return { gone: false, why: `an attempt in this process (pid ${me.pid}) holds it` };
  }
  if (lease.expiresAt <= now) return { gone: true, why: `its lease expired at ${new Date(lease.expiresAt).toISOString()}` };
  if (sameProcess) return { gone: false, why: `worker thread ${theirs.thread} of this process (pid ${me.pid}) holds a live lease` };
  if (!samePidSpace) {
    const where = owner.host === me.host ? `another boot or pid namespace (container) on ${owner.host}` : `another machine (${owner.host})`;
    return { gone: false, why: `${where} holds a live lease` };
  }
  switch (pidLiveness(owner.pid, owner.processStart)) {
    case "dead":
      return { gone: true, why: `process ${owner.pid} on ${owner.host} is gone` };
    case "other-process":
      return { gone: true, why: `pid ${owner.pid} now belongs to another process` };
    default:
      return { gone: false, why: `process ${owner.pid} on ${owner.host} is alive` };
  }
}
