/**
 * Bytes and RegExps as tagged JSON (values.ts encodes everything else): Buffer, Uint8Array and
 * the other typed arrays, DataView and ArrayBuffer hold their own bytes as base64, little-endian
 * whatever the host's; a RegExp holds `{ source, flags }` (and `lastIndex` when it is not 0).
 * Matched by exact prototype.
 */

// node:util/types, not node:util: the ES module form of node:util reads every one of its lazy
// properties, which costs an import of steplog several ms on Node 24.
import { isArrayBuffer, isRegExp } from "node:util/types";

/** The key of a tagged value: `{"$type": …, "value": …}`. */
export const TAG = "$type";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The typed arrays that are stored, each under its constructor's name. */
const TYPED_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;
type TypedArrayConstructor = (typeof TYPED_ARRAYS)[number];

/** A view's tag and element size, by its exact prototype. */
const VIEWS = new Map<object, { tag: string; size: number }>([
  [Buffer.prototype, { tag: "Buffer", size: 1 }],
  [DataView.prototype, { tag: "DataView", size: 1 }],
  ...TYPED_ARRAYS.map((c) => [c.prototype, { tag: c.name, size: c.BYTES_PER_ELEMENT }] as const),
]);
const TYPED_ARRAY_BY_TAG = new Map<string, TypedArrayConstructor>(TYPED_ARRAYS.map((c) => [c.name, c]));

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Stored bytes are little-endian: on a big-endian host, swap each element's bytes (in place). */
function swapBytes(bytes: Buffer, size: number): void {
  if (size === 2) bytes.swap16();
  else if (size === 4) bytes.swap32();
  else if (size === 8) bytes.swap64();
}

/** `length` bytes of `buffer` from `offset` (a view's own bytes, not the rest of its buffer) as base64. */
function bytesToBase64(buffer: ArrayBufferLike, offset: number, length: number, size: number): string {
  // A detached buffer has no bytes, and Buffer.from refuses it.
  if (length === 0) return "";
  const bytes = Buffer.from(buffer, offset, length);
  if (LITTLE_ENDIAN || size === 1) return bytes.toString("base64");
  const copy = Buffer.from(bytes);
  swapBytes(copy, size);
  return copy.toString("base64");
}

/** base64 into a new ArrayBuffer of exactly those bytes (host order for `size`-byte elements). */
function base64ToArrayBuffer(text: string, size: number): ArrayBuffer {
  const bytes = Buffer.from(text, "base64");
  if (!LITTLE_ENDIAN && size > 1) swapBytes(bytes, size);
  const buffer = new ArrayBuffer(bytes.length);
  new Uint8Array(buffer).set(bytes);
  return buffer;
}

/** The tag for bytes or a RegExp (`proto` is the value's prototype), or undefined for any other class instance. */
export function builtinToJson(object: object, proto: object): Json | undefined {
  if (ArrayBuffer.isView(object)) {
    const view = VIEWS.get(proto);
    return view && { [TAG]: view.tag, value: bytesToBase64(object.buffer, object.byteOffset, object.byteLength, view.size) };
  }
  if (proto === ArrayBuffer.prototype && isArrayBuffer(object)) {
    return { [TAG]: "ArrayBuffer", value: bytesToBase64(object, 0, object.byteLength, 1) };
  }
  if (proto === RegExp.prototype && isRegExp(object)) {
    const { source, flags, lastIndex } = object;
    const value: Json = Number.isSafeInteger(lastIndex) && lastIndex > 0 ? { source, flags, lastIndex } : { source, flags };
    return { [TAG]: "RegExp", value };
  }
  return undefined;
}

/** The bytes or RegExp a tagged value holds, or undefined when `tag` is none of theirs. */
export function builtinFromJson(tag: string, raw: Json): unknown {
  switch (tag) {
    case "Buffer":
      return Buffer.from(raw as string, "base64");
    case "ArrayBuffer":
      return base64ToArrayBuffer(raw as string, 1);
    case "DataView":
      return new DataView(base64ToArrayBuffer(raw as string, 1));
    case "RegExp": {
      const { source, flags, lastIndex } = raw as { source: string; flags: string; lastIndex?: number };
      const regExp = new RegExp(source, flags);
      if (lastIndex !== undefined) regExp.lastIndex = lastIndex;
      return regExp;
    }
    default: {
      const typedArray = TYPED_ARRAY_BY_TAG.get(tag);
      return typedArray ? new typedArray(base64ToArrayBuffer(raw as string, typedArray.BYTES_PER_ELEMENT)) : undefined;
    }
  }
}
