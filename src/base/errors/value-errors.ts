/**
 * A value that cannot be recorded or read back: not serialisable, too large, sealed with a key
 * the codec lacks; and EffectUnrecordedError, when such a value came from a step whose effect has
 * already happened.
 */

import { SteplogError, type ErrorCode, type SteplogErrorDetails } from "./steplog-error.js";
import { q } from "./quote.js";

export class ValueNotSerializableError extends SteplogError {
  override name = "ValueNotSerializableError";
  readonly path: string;
  constructor(what: string, path: string, found: string, details: SteplogErrorDetails = {}) {
    super(
      "VALUE_NOT_SERIALIZABLE",
      `${what} cannot be recorded faithfully: ${path} is ${found}. ` +
        `Return plain data (objects, arrays, strings, numbers, booleans, null, undefined, Date, BigInt, Map, Set), e.g. convert it with a plain object first.`,
      details,
    );
    this.path = path;
  }
}

export class ValueTooLargeError extends SteplogError {
  override name = "ValueTooLargeError";
  constructor(what: string, bytes: number, limit: number, details: SteplogErrorDetails = {}) {
    super(
      "VALUE_TOO_LARGE",
      `${what} is ${bytes} bytes encoded, over the limit of ${limit}. Store large data elsewhere and return a reference, or raise maxValueBytes in createEngine.`,
      details,
    );
  }
}

export class CodecKeyMissingError extends SteplogError {
  override name = "CodecKeyMissingError";
  readonly keyId: string;
  constructor(keyId: string, known: readonly string[], details: { runId?: string; step?: string } = {}) {
    const where =
      details.runId === undefined
        ? "A stored payload"
        : `Run ${q(details.runId)}: ${details.step === undefined ? "a stored payload" : `the record of step ${q(details.step)}`}`;
    super(
      "CODEC_KEY_MISSING",
      `${where} was sealed with key ${q(keyId)}, which this engine's encryptedCodec does not have (it has ${known.length === 0 ? "none" : known.map(q).join(", ")}). ` +
        `Nothing was read or overwritten. Add that key to encryptedCodec({ keys }) (for the steplog command, to STEPLOG_KEYS); keep old keys after a rotation, and try again.`,
      details,
    );
    this.keyId = keyId;
  }
}

/**
 * A compensatable or irreversible step's function returned (its effect happened) but its value
 * cannot be recorded: not serialisable, too large, or rejected by its result schema. Carries the
 * code of that reason. The step is left intended: the next continue settles it by its policy.
 */
export class EffectUnrecordedError extends SteplogError {
  override name = "EffectUnrecordedError";
  /** `policy`: how the next continue settles the step (its onUnknown, or its effect's default). */
  constructor(runId: string, step: string, effect: string, reason: unknown, policy: "query" | "redrive" | "compensate" | "escalate") {
    const settled = {
      query: "asking its query whether the effect happened",
      escalate: "the human queue (steplog escalations), where a person records what it produced",
      compensate: "running its compensate, then calling it again with a new idempotency key",
      redrive: 'calling it again with the same idempotency key (its onUnknown is "redrive")',
    }[policy];
    // A codec that failed to seal the value: it could not be written, whatever the value.
    const code: ErrorCode = reason instanceof SteplogError ? reason.code : "STORE_WRITE_FAILED";
    const why = reason instanceof Error ? reason.message : String(reason);
    super(
      code,
      `${reason instanceof SteplogError ? why : `Could not record the value of step ${q(step)} of run ${q(runId)}: ${why}.`} Step ${q(step)} is ${effect} and its function returned, so its effect has already happened: ` +
        `it is recorded as an unknown outcome (intended, not failed), never as a failure a continue would simply redo. ` +
        `Fix what it returns, then type engine.continue(${q(runId)}): the step is settled by ${settled}.`,
      { runId, step, cause: reason },
    );
  }
}
