/** One write an attempt makes under its lease; the group commit batches them, batch-shape.ts picks the statements a batch is sent as. */

import type { AttemptEnd, Fence, StepOutcome, StepRow, StreamRecord } from "../types.js";

export type AttemptWrite =
  | { kind: "intent"; fence: Fence; step: StepRow }
  | { kind: "outcome"; fence: Fence; outcome: StepOutcome }
  | { kind: "renew"; fence: Fence; expiresAt: number; now: number }
  | { kind: "end"; fence: Fence; end: AttemptEnd }
  /** Records of a run's streams: always sent the usual way (usual-write.ts). */
  | { kind: "stream"; fence: Fence; records: StreamRecord[] };

/** The write as an error message names it. */
export function describeWrite(write: AttemptWrite): string {
  switch (write.kind) {
    case "intent":
      return `the intent of step ${JSON.stringify(write.step.key)}`;
    case "outcome":
      return "a step outcome";
    case "renew":
      return "the lease renewal";
    case "end":
      return "the attempt's ending";
    case "stream":
      return "the stream's records";
  }
}
