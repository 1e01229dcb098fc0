// Which writes the Postgres store sends in one round trip (see src/store/postgres/one-trip.ts),
// and how their values become literals. No server needed: the statements are text.
import { describe, expect, it } from "vitest";
import { literal } from "../../src/store/postgres/connection.js";
import { oneTripStatements } from "../../src/store/postgres/one-trip.js";
import type { AttemptWrite } from "../../src/store/postgres/attempt-write.js";
import type { StepRow } from "../../src/store/types.js";

const fence = { runId: "run-1", epoch: 3 };
const step: StepRow = {
  runId: "run-1",
  seq: 2,
  attempt: 1,
  key: "charge",
  name: "charge",
  status: "intended",
  effect: "idempotent",
  idempotencyKey: "run-1:charge",
  value: null,
  error: null,
  version: null,
  intendedAt: 1_700_000_000_000,
  endedAt: null,
  calls: 0,
  resolution: null,
  usage: null,
  position: 1,
};
/** The write's statements as one text (undefined when it goes the usual way). */
const oneTripStatement = (s: string, write: AttemptWrite) => oneTripStatements(s, write)?.join(";\n");
const outcome = { seq: 2, status: "succeeded" as const, value: '"ok"', error: null, endedAt: 1_700_000_000_001, calls: 1, resolution: null, usage: null };

describe("postgres one-round-trip statements", () => {
  it("an intent, an outcome and a renewal each write only under the lease they were made with", () => {
    for (const write of [
      { kind: "intent", fence, step },
      { kind: "outcome", fence, outcome },
    ] satisfies AttemptWrite[]) {
      expect(oneTripStatement("s", write)).toContain("EXISTS (SELECT 1 FROM s.leases WHERE run_id = E'run-1' AND epoch = 3 AND attempt IS NOT NULL)");
    }
    expect(oneTripStatement("s", { kind: "renew", fence, expiresAt: 10, now: 5 })).toMatch(/WHERE run_id = E'run-1' AND epoch = 3 AND attempt IS NOT NULL$/);
  });

  it("strings become E'' literals with quotes doubled and backslashes escaped; a null has its column's type", () => {
    const text = oneTripStatement("s", { kind: "outcome", fence, outcome: { ...outcome, value: `"it's \\ here"` } })!;
    expect(text).toContain(`value = E'"it''s \\\\ here"'`);
    expect(text).toContain("error = NULL::text");
    const intent = oneTripStatement("s", { kind: "intent", fence, step })!;
    expect(intent).toContain("NULL::bigint"); // ended_at
  });

  it("an ending updates the attempt and the run under the live lease and releases the lease last", () => {
    const end = {
      attempt: 1,
      ending: "waiting" as const,
      endedAt: 7,
      error: null,
      run: { status: "waiting" as const, wakeAt: null, updatedAt: 7 },
      wakeOnEvent: "verdict",
      reused: ["a"],
    };
    const statements = oneTripStatements("s", { kind: "end", fence, end })!;
    expect(statements.map((t) => t.split(" ").slice(0, 2).join(" "))).toEqual(["UPDATE s.attempts", "UPDATE s.runs", "UPDATE s.runs", "UPDATE s.leases"]);
    for (const t of statements.slice(0, -1)) expect(t).toContain("epoch = 3 AND attempt IS NOT NULL");
    expect(statements[1]).toContain("status = E'waiting', wake_at = NULL, updated_at = 7");
    expect(statements[2]).toContain("name = E'verdict' AND consumed_by IS NULL");
    expect(statements[3]).toMatch(/^UPDATE s.leases SET attempt = NULL, .* WHERE run_id = E'run-1' AND epoch = 3 AND attempt IS NOT NULL$/s);
  });

  it("literals are ASCII: characters past it are \\u / \\U escapes, so no client encoding can move a quote or a backslash", () => {
    expect(literal("é ✓ 🐢 '\\")).toBe("E'\\u00e9 \\u2713 \\U0001f422 ''\\\\'");
    expect(literal("plain")).toBe("E'plain'");
  });

  it("goes the usual way for an outcome that consumes an event, a NUL in any text, or a number that is not a safe integer", () => {
    expect(oneTripStatement("s", { kind: "outcome", fence, outcome: { ...outcome, consumes: { eventSeq: 1, by: "x" } } })).toBeUndefined();
    expect(oneTripStatement("s", { kind: "outcome", fence, outcome: { ...outcome, value: "a\u0000b" } })).toBeUndefined();
    expect(oneTripStatement("s", { kind: "intent", fence, step: { ...step, usage: "\u0000" } })).toBeUndefined();
    expect(oneTripStatement("s", { kind: "intent", fence, step: { ...step, intendedAt: 1.5 } })).toBeUndefined();
    expect(oneTripStatement("s", { kind: "renew", fence: { ...fence, epoch: Number.NaN }, expiresAt: 1, now: 1 })).toBeUndefined();
    const end = { attempt: 1, ending: "failed" as const, endedAt: 1, error: "bad\u0000", run: { status: "failed" as const } };
    expect(oneTripStatement("s", { kind: "end", fence, end })).toBeUndefined();
  });
});

describe("the Postgres store's location in messages", () => {
  it("names host, port and database, never a password, even one holding / or read as a port", async () => {
    const { describeTarget } = await import("../../src/store/postgres/connection.js");
    expect(describeTarget("postgres://u:12/ss@127.0.0.1:1/db", undefined)).toBe("127.0.0.1:1/db");
    expect(describeTarget("postgres://u:Sup3r/Secret@db.internal:5433/app", undefined)).toBe("db.internal:5433/app");
    expect(describeTarget("postgres://alice:pw@h", undefined)).toBe("h:5432/alice");
  });
});
