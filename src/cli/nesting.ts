/**
 * Steps that run inside another step (a Claude Code session's tool calls, durableClaudeQuery):
 * a step named `<outer key>/<rest>` (the outer key's `#` as `%23`) is shown under the outer
 * step, by the part after the slash, when the outer step is shown beside it.
 */

/** Per key of `keys` that runs inside another of them: the outer key and the inner part of its name. */
export function nestedKeys(keys: readonly string[]): Map<string, { outer: string; rest: string }> {
  const out = new Map<string, { outer: string; rest: string }>();
  const prefixes = keys.map((key) => [`${key.replaceAll("#", "%23")}/`, key] as const);
  for (const key of keys) {
    let best: { outer: string; rest: string } | undefined;
    for (const [prefix, outer] of prefixes) {
      if (outer !== key && key.startsWith(prefix) && (!best || outer.length > best.outer.length)) best = { outer, rest: key.slice(prefix.length) };
    }
    if (best) out.set(key, best);
  }
  return out;
}
