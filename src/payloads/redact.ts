/**
 * Redaction for display: what an operator sees in get(id, { redact: true }), the steplog
 * command and the HTML timeline, so a timeline can be shared without its secrets. The stored
 * records are untouched (encrypt them with a codec if they must not be stored in clear).
 *
 * A rule is a dotted path. A path without a dot ("token") matches that key at any depth; a path
 * with dots ("customer.card.number") matches from the top of each value; "*" matches any one
 * key. Or pass a function (path, value) => boolean.
 */

export type RedactRule = string[] | ((path: string[], value: unknown) => boolean);

export const REDACTED = "[redacted]";

export function redact(value: unknown, rule: RedactRule | undefined): unknown {
  if (rule === undefined) return value;
  const matches = typeof rule === "function" ? rule : pathMatcher(rule);
  return walk(value, [], matches);
}

function pathMatcher(rules: string[]): (path: string[]) => boolean {
  const parsed = rules.map((r) => r.split("."));
  return (path) =>
    parsed.some((segments) => {
      if (segments.length === 1) return path.length > 0 && (segments[0] === "*" || segments[0] === path.at(-1));
      return segments.length === path.length && segments.every((s, i) => s === "*" || s === path[i]);
    });
}

function walk(value: unknown, path: string[], matches: (path: string[], value: unknown) => boolean): unknown {
  if (path.length > 0 && matches(path, value)) return REDACTED;
  if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, String(i)], matches));
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, walk(v, [...path, String(k)], matches)]));
  if (value instanceof Set) return new Set([...value].map((v, i) => walk(v, [...path, String(i)], matches)));
  // Bytes and a RegExp are shown whole (or redacted whole), not taken apart into their indexes.
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof RegExp) return value;
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = walk(item, [...path, key], matches);
    return out;
  }
  return value;
}
