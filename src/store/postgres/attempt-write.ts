/** One write an attempt makes under its lease; the write queue batches them, one-trip.ts turns the common ones into statements. */

import type { AttemptEnd, Fence, StepOutcome, StepRow } from "../types.js";

export type AttemptWrite =
  | { kind: "intent"; fence: Fence; step: StepRow }
  | { kind: "outcome"; fence: Fence; outcome: StepOutcome }
  | { kind: "renew"; fence: Fence; expiresAt: number; now: number }
  | { kind: "end"; fence: Fence; end: AttemptEnd };
