/**
 * Who owns an attempt, and whether that owner is gone. The rule is deliberately
 * conservative: a pid alone never proves death or life.
 *
 * An owner is gone when
 * - its lease has expired (any host; the epoch, not the clock, keeps a late writer out), or
 * - it ran on this machine (same host and boot) and its pid is dead, or now belongs to a
 *   process with another start time, or
 * - it is this very process and no attempt in it holds the run any more.
 * A live pid whose start time cannot be read counts as alive until the lease expires.
 */

import fs from "node:fs";
import os from "node:os";
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

let self: OwnerRow | undefined;

/** This process, as an attempt's owner. */
export function currentOwner(): OwnerRow {
  if (!self) {
    const stat = readProcStat(process.pid);
    self = {
      host: os.hostname(),
      bootId: readBootId(),
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
  const sameMachine = owner.host === me.host && owner.bootId === me.bootId;
  if (sameMachine && owner.pid === me.pid && owner.processStart === me.processStart) {
    if (!isHeldHere()) return { gone: true, why: `no attempt in this process (pid ${me.pid}) holds it any more` };
    return { gone: false, why: `an attempt in this process (pid ${me.pid}) holds it` };
  }
  if (lease.expiresAt <= now) return { gone: true, why: `its lease expired at ${new Date(lease.expiresAt).toISOString()}` };
  if (!sameMachine) return { gone: false, why: `another machine (${owner.host}) holds a live lease` };
  switch (pidLiveness(owner.pid, owner.processStart)) {
    case "dead":
      return { gone: true, why: `process ${owner.pid} on ${owner.host} is gone` };
    case "other-process":
      return { gone: true, why: `pid ${owner.pid} now belongs to another process` };
    default:
      return { gone: false, why: `process ${owner.pid} on ${owner.host} is alive` };
  }
}
