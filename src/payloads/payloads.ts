/**
 * Payloads: how values, args, event payloads and error details become stored text and back.
 * A value is first encoded to readable tagged JSON (values.ts, where the size cap applies),
 * then passed through the engine's codec, if any (encryption, say). Only these payloads go
 * through the codec; statuses, names and times stay plain so the step log can still be queried.
 */

import { CodecKeyMissingError, StoreUnreadableError, type ErrorInfo, type SteplogErrorDetails } from "../base/errors.js";
import { decodeValue, encodeValueAndDecoded, NOT_DECODED, type EncodeLimits, type ValueName } from "./values.js";
import type { StoredRun } from "../store/types.js";
import { onFirstUse } from "../base/on-first-use.js";

/** node:crypto, loaded on the first digest. */
const nodeCrypto = onFirstUse<typeof import("node:crypto")>("node:crypto");

/** Turns stored text into other stored text and back; async allowed. */
export interface Codec {
  encode(plain: string): string | Promise<string>;
  decode(stored: string): string | Promise<string>;
  /**
   * The ids of the keys this codec can open (encryptedCodec has it). With it, a continue whose
   * run holds a payload sealed with another key is refused before it claims the run, counting
   * no attempt.
   */
  readonly keyIds?: readonly string[];
  /**
   * A keyed digest of `plain` that reveals nothing of it without the key (encryptedCodec: an
   * HMAC-SHA-256 under a key derived from its current key). `like`, a digest this codec made
   * earlier, names the key to use, so a digest made before a key rotation still compares. A step's
   * input is compared by it on a continue; a codec without it records no digest for an input.
   */
  digest?(plain: string, like?: string): string;
}

const SEALED = /^enc:v1:([^:]*):/;

/** A step's sealed input, from its resolution's text (steps/step-input.ts writes it there), or a parked run's from its waitingFor (steps/approval-gate.ts); null for none. */
function sealedInput(resolution: string | null): string | null {
  return resolution === null ? null : (/"input":"(enc:v1:[^"]*)"/.exec(resolution)?.[1] ?? null);
}

/** Without a codec, a sealed payload cannot be read: say which key it needs rather than fail to parse it. */
function plainOrRefuse(stored: string): string {
  const sealed = SEALED.exec(stored);
  if (sealed) throw new CodecKeyMissingError(sealed[1] ?? "?", []);
  return stored;
}

export interface Encoded {
  /** The readable tagged JSON: what the first attempt decodes. */
  plain: string;
  /** What is written: the plain text, or what the codec made of it. */
  stored: string;
  /** What decoding `plain` gives, when the encoder had it at hand (a plain-JSON value's copy); else NOT_DECODED. */
  decoded: unknown;
}

/**
 * What `value`, encoded as `encoded`, is handed back as: what decoding its text gives, as a
 * continue would hand it back. A plain value's copy is that already, and every encodable
 * primitive decodes to itself (undefined, bigints, NaN and -0 too); only the rest is parsed.
 */
export function decodedOf(value: unknown, encoded: Encoded): unknown {
  if (encoded.decoded !== NOT_DECODED) return encoded.decoded;
  return typeof value === "object" ? decodeValue(encoded.plain) : value;
}

export class Payloads {
  readonly #limits: EncodeLimits;

  constructor(
    readonly maxBytes: number,
    private readonly codec: Codec | undefined,
    /** The store's location, for the message when a stored payload turns out damaged. */
    private readonly location = "store",
  ) {
    this.#limits = { maxBytes };
  }

  /**
   * Why a stored payload cannot be read back (damaged on disk: a page SQLite's integrity check
   * does not see), or undefined. Checked before a claim so that a damaged run is refused before
   * anything is written. A payload sealed by a codec is checked when it is opened instead.
   */
  damage(stored: string | null): string | undefined {
    if (stored === null || this.codec || SEALED.test(stored)) return undefined;
    try {
      JSON.parse(stored);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  /** JSON.parse of stored text, a failure named as the damage it is (STORE_UNREADABLE). */
  #parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new StoreUnreadableError(
        this.location,
        `a recorded payload does not decode (${(error as Error).message}): the store is damaged`,
        error,
        false,
        "It was left untouched. Restore it from a backup.",
      );
    }
  }

  /** Encode a value; `plain` is the readable JSON (what the first attempt decodes), `stored` what is written. */
  /** Without a codec the answer is immediate (no promise): the step hot path takes it as it is. */
  encode(value: unknown, what: ValueName, details: SteplogErrorDetails = {}): Encoded | Promise<Encoded> {
    const { text: plain, decoded } = encodeValueAndDecoded(value, what, this.#limits, details);
    if (!this.codec) return { plain, stored: plain, decoded };
    const sealed = this.codec.encode(plain);
    return typeof sealed === "string" ? { plain, stored: sealed, decoded } : sealed.then((stored) => ({ plain, stored, decoded }));
  }

  /** Without a codec the answer is immediate (no promise), as with encode. */
  decode(stored: string): unknown {
    if (!this.codec) return this.#decodeValue(plainOrRefuse(stored));
    const opened = this.codec.decode(stored);
    return typeof opened === "string" ? this.#decodeValue(opened) : opened.then((text) => this.#decodeValue(text));
  }

  #decodeValue(text: string): unknown {
    try {
      return decodeValue(text);
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      return this.#parse(text); // throws, naming the damage
    }
  }

  /** The id of a key `stored` is sealed with that this engine cannot open, if it can tell. */
  missingKey(stored: string | null): string | undefined {
    const sealed = stored === null ? null : SEALED.exec(stored);
    if (!sealed) return undefined;
    const id = sealed[1] ?? "?";
    if (!this.codec) return id;
    return this.codec.keyIds === undefined || this.codec.keyIds.includes(id) ? undefined : id;
  }

  /**
   * A CodecKeyMissingError for the first record of the run this engine's codec cannot open
   * (its args, a step's value or error, an event's payload), if any. A run whose records are
   * sealed takes no plain payloads either: an engine without the key must not write beside them.
   */
  sealedBeyond(current: StoredRun): CodecKeyMissingError | undefined {
    const runId = current.run.id;
    const argsKey = this.missingKey(current.run.args) ?? this.missingKey(sealedInput(current.run.waitingFor));
    if (argsKey !== undefined) return new CodecKeyMissingError(argsKey, this.keyIds, { runId });
    for (const step of current.steps) {
      const keyId = this.missingKey(step.value) ?? this.missingKey(step.error) ?? this.missingKey(sealedInput(step.resolution));
      if (keyId !== undefined) return new CodecKeyMissingError(keyId, this.keyIds, { runId, step: step.key });
    }
    for (const event of current.events) {
      const keyId = this.missingKey(event.payload);
      if (keyId !== undefined) return new CodecKeyMissingError(keyId, this.keyIds, { runId });
    }
    return undefined;
  }

  /** The key ids this engine can open, for a message. */
  get keyIds(): readonly string[] {
    return this.codec?.keyIds ?? [];
  }

  /**
   * The digest of a step's input, by its plain encoding: without a codec, `sha256:<hex>` of it;
   * with one, the codec's keyed digest (none when the codec makes none). `like`: the recorded
   * digest it will be compared with.
   */
  digest(plain: string, like?: string): string | undefined {
    // perf: the one-shot hash, a quarter of createHash's cost (Node 20.12+, Bun, Deno).
    if (!this.codec) return `sha256:${nodeCrypto().hash("sha256", plain, "hex")}`;
    return this.codec.digest?.(plain, like);
  }

  /** Seal a plain encoding with the codec (as is without one). */
  seal(plain: string): string | Promise<string> {
    return this.codec ? this.codec.encode(plain) : plain;
  }

  async encodeError(info: ErrorInfo): Promise<string> {
    const plain = JSON.stringify(info);
    return this.codec ? this.codec.encode(plain) : plain;
  }

  async decodeError(stored: string): Promise<ErrorInfo> {
    return this.#parse(this.codec ? await this.codec.decode(stored) : plainOrRefuse(stored)) as ErrorInfo;
  }
}
