/**
 * Payloads: how values, args, event payloads and error details become stored text and back.
 * A value is first encoded to readable tagged JSON (values.ts, where the size cap applies),
 * then passed through the engine's codec, if any (encryption, say). Only these payloads go
 * through the codec; statuses, names and times stay plain so the step log can still be queried.
 */

import { CodecKeyMissingError, type ErrorInfo, type SteplogErrorDetails } from "./errors.js";
import { decodeValue, encodeValue } from "./values.js";

/** Turns stored text into other stored text and back; async allowed. */
export interface Codec {
  encode(plain: string): string | Promise<string>;
  decode(stored: string): string | Promise<string>;
}

const SEALED = /^enc:v1:([^:]*):/;

/** Without a codec, a sealed payload cannot be read: say which key it needs rather than fail to parse it. */
function plainOrRefuse(stored: string): string {
  const sealed = SEALED.exec(stored);
  if (sealed) throw new CodecKeyMissingError(sealed[1] ?? "?", []);
  return stored;
}

export class Payloads {
  constructor(
    readonly maxBytes: number,
    private readonly codec: Codec | undefined,
  ) {}

  /** Encode a value; `plain` is the readable JSON (what the first attempt decodes), `stored` what is written. */
  async encode(value: unknown, what: string | (() => string), details: SteplogErrorDetails = {}): Promise<{ plain: string; stored: string }> {
    const plain = encodeValue(value, what, { maxBytes: this.maxBytes }, details);
    return { plain, stored: this.codec ? await this.codec.encode(plain) : plain };
  }

  async decode(stored: string): Promise<unknown> {
    return decodeValue(this.codec ? await this.codec.decode(stored) : plainOrRefuse(stored));
  }

  async encodeError(info: ErrorInfo): Promise<string> {
    const plain = JSON.stringify(info);
    return this.codec ? this.codec.encode(plain) : plain;
  }

  async decodeError(stored: string): Promise<ErrorInfo> {
    return JSON.parse(this.codec ? await this.codec.decode(stored) : plainOrRefuse(stored)) as ErrorInfo;
  }
}
