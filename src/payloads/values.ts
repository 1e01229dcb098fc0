/**
 * Values are stored as readable JSON. Types JSON cannot carry faithfully (Date, BigInt, Map,
 * Set, undefined, NaN, ±Infinity, -0, bytes, RegExp) are written as tagged objects
 * `{"$type": …, "value": …}`; a user object that itself has a `$type` key is wrapped so it is
 * never mistaken for a tag. Anything else (functions, symbols, class instances, cycles) is
 * refused with its path, so what a continue hands back is always deep-equal to what the first
 * attempt got.
 *
 * Bytes (Buffer, Uint8Array and the other typed arrays, DataView, ArrayBuffer) are tagged with
 * their type's name and hold their own bytes as base64 (a view on part of a larger buffer holds
 * only its part), in little-endian order whatever the host's (see builtins.ts); a RegExp holds
 * `{ source, flags }` (and `lastIndex` when it is not 0). They are matched by exact prototype: a
 * subclass of Uint8Array other than Node's Buffer is a class instance like any other. The tags
 * were added later: text written before them never holds one bare (a user's `$type` key is
 * wrapped), so it decodes as it always did.
 */

import { ValueNotSerializableError, ValueTooLargeError, type SteplogErrorDetails } from "../base/errors.js";
import { TAG, builtinFromJson, builtinToJson, type Json } from "./builtins.js";

/** The tag as it appears in stored text (decodeValue looks for it in every value it reads). */
const QUOTED_TAG = `"${TAG}"`;

/** Why a value cannot be encoded, before it is turned into a SteplogError naming the value. */
export class Unencodable {
  constructor(
    readonly path: string,
    readonly found: string,
  ) {}
}

function describe(value: unknown): string {
  if (typeof value === "function") return `a function${value.name ? ` (${value.name})` : ""}`;
  if (typeof value === "symbol") return `a symbol (${value.toString()})`;
  if (typeof value === "object" && value !== null) {
    const ctor = Object.getPrototypeOf(value)?.constructor?.name;
    return `an instance of ${ctor || "an unknown class"}`;
  }
  return typeof value;
}

/** Where the walk is: object keys, array indexes, or a Map/Set position. The path string is only built on failure. */
type Segment = string | number | { label: string };

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

function pathOf(trail: Segment[]): string {
  let path = "$";
  for (const s of trail) {
    if (typeof s === "number") path += `[${s}]`;
    else if (typeof s === "string") path += IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
    else path += s.label;
  }
  return path;
}

/** An own data property even for the key "__proto__" (plain assignment would set the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function toJson(value: unknown, trail: Segment[], seen: Set<object>): Json | Unencodable {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (Number.isFinite(value)) return Object.is(value, -0) ? { [TAG]: "Number", value: "-0" } : value;
      return { [TAG]: "Number", value: String(value) };
    case "undefined":
      return { [TAG]: "undefined" };
    case "bigint":
      return { [TAG]: "BigInt", value: value.toString() };
    case "function":
    case "symbol":
      return new Unencodable(pathOf(trail), describe(value));
  }
  if (value === null) return null;
  const object = value as object;
  if (seen.has(object)) return new Unencodable(pathOf(trail), "a circular reference");
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      const out: Json[] = new Array(object.length);
      for (let i = 0; i < object.length; i++) {
        trail.push(i);
        const item = toJson(object[i], trail, seen);
        trail.pop();
        if (item instanceof Unencodable) return item;
        out[i] = item;
      }
      return out;
    }
    if (object instanceof Date) {
      const time = object.getTime();
      return { [TAG]: "Date", value: Number.isNaN(time) ? null : object.toISOString() };
    }
    if (object instanceof Map) {
      const entries: Json[] = [];
      let i = 0;
      for (const [k, v] of object) {
        trail.push({ label: `<key ${i}>` });
        const key = toJson(k, trail, seen);
        trail.pop();
        if (key instanceof Unencodable) return key;
        trail.push({ label: `<value ${i}>` });
        const item = toJson(v, trail, seen);
        trail.pop();
        if (item instanceof Unencodable) return item;
        entries.push([key, item]);
        i++;
      }
      return { [TAG]: "Map", value: entries };
    }
    if (object instanceof Set) {
      const items: Json[] = [];
      let i = 0;
      for (const v of object) {
        trail.push({ label: `<item ${i}>` });
        const item = toJson(v, trail, seen);
        trail.pop();
        if (item instanceof Unencodable) return item;
        items.push(item);
        i++;
      }
      return { [TAG]: "Set", value: items };
    }
    const proto = Object.getPrototypeOf(object) as object | null;
    if (proto !== Object.prototype && proto !== null) return builtinToJson(object, proto) ?? new Unencodable(pathOf(trail), describe(object));
    if (hasEnumerableSymbol(object)) return new Unencodable(pathOf(trail), "an object with symbol keys");
    const out: { [key: string]: Json } = {};
    for (const key of Object.keys(object)) {
      trail.push(key);
      const item = toJson((object as Record<string, unknown>)[key], trail, seen);
      trail.pop();
      if (item instanceof Unencodable) return item;
      setOwn(out, key, item);
    }
    return Object.hasOwn(out, TAG) ? { [TAG]: "Object", value: out } : out;
  } finally {
    seen.delete(object);
  }
}

function fromJson(json: Json): unknown {
  if (json === null || typeof json !== "object") return json;
  if (Array.isArray(json)) return json.map(fromJson);
  // Own keys only: a key added to Object.prototype must not make every object read as a tag.
  if (Object.hasOwn(json, TAG)) {
    const raw = json.value;
    switch (json[TAG]) {
      case "undefined":
        return undefined;
      case "Number":
        return raw === "-0" ? -0 : Number(raw);
      case "BigInt":
        return BigInt(raw as string);
      case "Date":
        return new Date(raw === null ? Number.NaN : (raw as string));
      case "Map":
        return new Map((raw as Json[][]).map(([k, v]) => [fromJson(k as Json), fromJson(v as Json)]));
      case "Set":
        return new Set((raw as Json[]).map(fromJson));
      case "Object":
        return plainObject(raw as { [key: string]: Json });
      default: {
        const builtin = builtinFromJson(json[TAG] as string, raw!);
        if (builtin !== undefined) return builtin;
      }
    }
  }
  return plainObject(json);
}

function plainObject(json: { [key: string]: Json }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(json)) setOwn(out, key, fromJson(json[key] as Json));
  return out;
}

/** Past this depth the plain check gives up and the full encoder (which finds cycles) decides. */
const PLAIN_DEPTH_LIMIT = 64;

/**
 * An enumerable own symbol key would be lost (JSON has no symbols), so a value with one is
 * refused; a non-enumerable property, symbol or string, is not part of the value, as for JSON.
 */
function hasEnumerableSymbol(object: object): boolean {
  for (const symbol of Object.getOwnPropertySymbols(object)) if (Object.prototype.propertyIsEnumerable.call(object, symbol)) return true;
  return false;
}

const hasOwnProperty = Object.prototype.hasOwnProperty;

/** What plainCopy returns for a value JSON does not carry exactly. */
const NOT_PLAIN: unique symbol = Symbol("not plain JSON");

/**
 * A copy of a value JSON.stringify encodes exactly, or NOT_PLAIN: strings, booleans, null,
 * finite numbers other than -0, plain arrays of those with no holes, and objects whose
 * prototype is Object.prototype or null, with no enumerable symbol keys, no "$type" key, no
 * undefined values and no toJSON. The copy is what JSON.parse of its text gives (plain objects and packed
 * arrays, keys in the same order), so it is what is recorded and what the step hands back
 * without parsing the text again; each property is read once, so a getter cannot make the two
 * differ.
 */
function plainCopy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0) ? value : NOT_PLAIN;
    case "object":
      break;
    default:
      return NOT_PLAIN;
  }
  if (value === null) return null;
  if (depth > PLAIN_DEPTH_LIMIT) return NOT_PLAIN;
  // A toJSON anywhere (own, inherited, not enumerable) would change what JSON.stringify writes.
  if ("toJSON" in value) return NOT_PLAIN;
  const proto = Object.getPrototypeOf(value);
  // An array whose prototype was changed, or an object posing as an array, is the tagged
  // encoder's to judge.
  const isArray = Array.isArray(value);
  if (isArray !== (proto === Array.prototype)) return NOT_PLAIN;
  if (isArray) {
    // Element by element (not slice, which builds through the array's own species).
    const array = value as unknown[];
    const out: unknown[] = [];
    for (let i = 0; i < array.length; i++) {
      const item = plainCopy(array[i], depth + 1);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out.push(item);
    }
    return out;
  }
  if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
  // The spread reads each property once and copies the object's shape in one go (no property
  // added one at a time); what it copied is checked, and what nests is replaced by its own copy.
  // It copies enumerable symbol keys too (a proxy's as it answered them): the copy is checked
  // for them once, and the tagged encoder refuses them.
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  if (Object.getOwnPropertySymbols(out).length > 0) return NOT_PLAIN;
  // for-in, not Object.keys: V8 reads each property through the object's enum cache (no keyed
  // lookup, which is megamorphic here, every value having its own shape). It also visits an
  // enumerable property inherited from Object.prototype: a value that meets one is not plain.
  for (const key in out) {
    if (!hasOwnProperty.call(out, key) || key === TAG) return NOT_PLAIN;
    const item = out[key];
    if (typeof item === "object" && item !== null) {
      const copy = plainCopy(item, depth + 1);
      if (copy === NOT_PLAIN) return NOT_PLAIN;
      setOwn(out, key, copy);
    } else if (plainCopy(item, depth + 1) === NOT_PLAIN) return NOT_PLAIN;
  }
  return out;
}

/** A value's stored text, and `decoded`: what decoding the text gives, when the encoder had it at hand (else NOT_DECODED). */
export interface EncodedText {
  text: string;
  decoded: unknown;
}

/** EncodedText.decoded of a value whose text must be decoded to get it. */
export const NOT_DECODED: unique symbol = Symbol("not decoded");

function encodeToText(value: unknown): EncodedText | Unencodable {
  // Most step values are plain JSON already: then JSON.stringify of their copy writes exactly
  // what the tagged encoding would, without building a tagged tree first.
  const copy = plainCopy(value, 0);
  if (copy !== NOT_PLAIN) return { text: JSON.stringify(copy), decoded: copy };
  const json = toJson(value, [], new Set());
  return json instanceof Unencodable ? json : { text: JSON.stringify(json), decoded: NOT_DECODED };
}

/** Encode to stored text, or describe why the value cannot be stored faithfully. */
export function tryEncode(value: unknown): string | Unencodable {
  const encoded = encodeToText(value);
  return encoded instanceof Unencodable ? encoded : encoded.text;
}

export interface EncodeLimits {
  maxBytes: number;
}

/** What a value is, for an error message: text, or a function building it (from the error's details) only when one is thrown. */
export type ValueName = string | ((details: SteplogErrorDetails) => string);

/** Encode `value`, throwing VALUE_NOT_SERIALIZABLE or VALUE_TOO_LARGE naming `what`. */
export function encodeValue(value: unknown, what: ValueName, limits: EncodeLimits, details: SteplogErrorDetails = {}): string {
  // perf: a string (a stream's usual chunk) is plain JSON as it is: no copy to walk or hand back.
  if (typeof value === "string") {
    const text = JSON.stringify(value);
    if (text.length * 3 > limits.maxBytes) checkSize(text, what, limits, details);
    return text;
  }
  return encodeValueAndDecoded(value, what, limits, details).text;
}

/** As encodeValue, with what decoding the text gives when that is at hand (a plain value's copy). */
export function encodeValueAndDecoded(value: unknown, what: ValueName, limits: EncodeLimits, details: SteplogErrorDetails = {}): EncodedText {
  const encoded = encodeToText(value);
  if (encoded instanceof Unencodable) throw new ValueNotSerializableError(nameOf(what, details), encoded.path, encoded.found, details);
  const text = encoded.text;
  // A string's UTF-8 size is at most 3 bytes per UTF-16 unit; count exactly only near the cap.
  if (text.length * 3 > limits.maxBytes) checkSize(text, what, limits, details);
  return encoded;
}

/** VALUE_TOO_LARGE when `text` is over the cap in UTF-8. */
function checkSize(text: string, what: ValueName, limits: EncodeLimits, details: SteplogErrorDetails): void {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > limits.maxBytes) throw new ValueTooLargeError(nameOf(what, details), bytes, limits.maxBytes, details);
}

function nameOf(what: ValueName, details: SteplogErrorDetails): string {
  return typeof what === "string" ? what : what(details);
}

export function decodeValue(text: string): unknown {
  const json = JSON.parse(text) as Json;
  // Text with no tag anywhere is plain JSON already: nothing to rebuild.
  return text.includes(QUOTED_TAG) ? fromJson(json) : json;
}

export const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
