/**
 * Fault points for crash tests. STEPLOG_FAULT names a point and a step key, for example
 * `after-intent@charge`; when the attempt reaches it, the process SIGKILLs itself: no
 * finally blocks, no exit handlers, exactly like `kill -9`. The variable is read once at
 * start-up; unset, every check is one comparison with undefined. `before-wake@<child run id>`:
 * a child run's ending is committed and its parent not yet woken. `during-prune@<run id>`: inside
 * a prune's transaction, that run's rows partly deleted (JSONL: before its line is appended);
 * `after-prune-batch@*`: a prune's batch committed, the next not begun.
 */

export type FaultPoint =
  "before-intent" | "after-intent" | "after-fn" | "after-outcome" | "before-end" | "before-wake" | "during-migration" | "during-prune" | "after-prune-batch";

const spec = process.env.STEPLOG_FAULT;
const parsed = spec === undefined || spec === "" ? undefined : parse(spec);

function parse(text: string): { point: string; step: string } {
  const at = text.indexOf("@");
  return at === -1 ? { point: text, step: "*" } : { point: text.slice(0, at), step: text.slice(at + 1) };
}

/** True when a fault is armed for this point and step (so the caller may await what it must first). */
export function faultArmed(point: FaultPoint, step: string): boolean {
  return parsed !== undefined && parsed.point === point && (parsed.step === "*" || parsed.step === step);
}

export function fault(point: FaultPoint, step: string): void {
  if (parsed === undefined) return;
  if (faultArmed(point, step)) process.kill(process.pid, "SIGKILL");
}
