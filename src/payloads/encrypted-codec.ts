/**
 * encryptedCodec: AES-256-GCM from node:crypto. Each stored payload carries the id of the key
 * that sealed it, so keys can be rotated: seal with `current`, keep older keys for opening.
 * Text that is not sealed (written before encryption was turned on) is read as it is.
 *
 *   enc:v1:<key id>:<iv, base64>:<auth tag, base64>:<ciphertext, base64>
 */

import { CodecKeyMissingError, InvalidOptionError, StoreUnreadableError } from "../base/errors.js";
import { onFirstUse } from "../base/on-first-use.js";
import type { Codec } from "./payloads.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";

export interface EncryptedCodecOptions {
  /** Key id → 32-byte key (bytes: a Buffer or Uint8Array; or base64 / hex text of 32 bytes). */
  keys: Record<string, Uint8Array | string>;
  /** The id of the key new payloads are sealed with. */
  current: string;
}

/** node:crypto, loaded by the first codec made: an app without one never loads it at import. */
const nodeCrypto = onFirstUse<typeof import("node:crypto")>("node:crypto");

const PREFIX = "enc:v1:";
/** A keyed digest: hmac-sha256:<key id>:<hex>. */
const DIGEST_PREFIX = "hmac-sha256:";
/** What a key id may be. */
export const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** A key's bytes: given as bytes, 64 hex digits, or base64 (or base64url). */
export function keyBytes(key: Uint8Array | string): Buffer {
  return typeof key !== "string" ? Buffer.from(key) : /^[0-9a-f]{64}$/i.test(key) ? Buffer.from(key, "hex") : Buffer.from(key, "base64");
}

function toKey(id: string, key: Uint8Array | string): Buffer {
  const bytes = keyBytes(key);
  if (bytes.length !== 32)
    throw new InvalidOptionError(
      `encryptedCodec: key ${JSON.stringify(id)} must be 32 bytes (AES-256), got ${bytes.length}. Make one with crypto.randomBytes(32).`,
    );
  return bytes;
}

export function encryptedCodec(options: EncryptedCodecOptions): Codec {
  checkKnownKeys("encryptedCodec", options, { keys: true, current: true } satisfies KnownKeys<EncryptedCodecOptions>);
  const keys = new Map<string, Buffer>();
  for (const [i, [id, key]] of Object.entries(options.keys).entries()) {
    // Not echoed: a key given where its id belongs would be printed.
    if (!KEY_ID.test(id)) throw new InvalidOptionError(`encryptedCodec: key id number ${i + 1} of keys must be 1–64 letters, digits, "_", "." or "-".`);
    keys.set(id, toKey(id, key));
  }
  const current = keys.get(options.current);
  if (!current)
    throw new InvalidOptionError(
      `encryptedCodec: current key ${JSON.stringify(options.current)} is not among keys (${[...keys.keys()].join(", ") || "none"}).`,
    );
  const crypto = nodeCrypto();
  // Each key's digest key: derived from it, never the key itself, so a digest tells nothing of the sealing key.
  const digestKeys = new Map([...keys].map(([id, key]) => [id, crypto.createHmac("sha256", key).update("steplog input digest v1").digest()]));
  return {
    keyIds: [...keys.keys()],
    encode(plain: string): string {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv("aes-256-gcm", current, iv);
      const sealed = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `${PREFIX}${options.current}:${iv.toString("base64")}:${cipher.getAuthTag().toString("base64")}:${sealed.toString("base64")}`;
    },
    digest(plain: string, like?: string): string {
      const likeId = like?.startsWith(DIGEST_PREFIX) ? like.slice(DIGEST_PREFIX.length).split(":")[0] : undefined;
      const id = likeId !== undefined && digestKeys.has(likeId) ? likeId : options.current;
      return `${DIGEST_PREFIX}${id}:${crypto.createHmac("sha256", digestKeys.get(id)!).update(plain).digest("hex")}`;
    },
    decode(stored: string): string {
      if (!stored.startsWith(PREFIX)) return stored;
      const [id, iv, tag, sealed] = stored.slice(PREFIX.length).split(":");
      const key = keys.get(id ?? "");
      if (!key) throw new CodecKeyMissingError(id ?? "?", [...keys.keys()]);
      try {
        const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv ?? "", "base64"));
        decipher.setAuthTag(Buffer.from(tag ?? "", "base64"));
        return Buffer.concat([decipher.update(Buffer.from(sealed ?? "", "base64")), decipher.final()]).toString("utf8");
      } catch (error) {
        throw new StoreUnreadableError(
          `encrypted payload (key ${JSON.stringify(id)})`,
          "it failed authentication: the key given with that id is not the one that sealed it, or the data was changed",
          error,
          false,
          `Check that key ${JSON.stringify(id)} in encryptedCodec({ keys }) (for the steplog command, STEPLOG_KEYS) is the key that sealed it; if the data was changed, restore the store from a backup.`,
        );
      }
    },
  };
}
