/**
 * A run's current rows: the latest row of each step key (a key's later rows replace its earlier
 * ones, as a continue reads them).
 */

/**
 * The latest row of each key that `matches`, in order of each key's first row. Most runs hold
 * no row of what is looked for (an escalation, a handled failure), so one pass first says
 * whether any row matches at all before a table of every key's latest row is built (10,000
 * entries for a 10,000-step run, on every continue). `matches` is asked of rows alone.
 */
export function latestRows<R extends { key: string }>(steps: readonly R[], matches: (row: R) => boolean): R[] {
  if (!steps.some(matches)) return [];
  const latest = new Map<string, R>();
  for (const row of steps) latest.set(row.key, row);
  const out: R[] = [];
  for (const row of latest.values()) if (matches(row)) out.push(row);
  return out;
}
