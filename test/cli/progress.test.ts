// The progress view of `steplog run`, rendered to strings: a pure function from progress
// events to lines, and the live printer on a terminal and off one.
import { describe, expect, it } from "vitest";
import type { ProgressEvent } from "../../src/steps/attempt-settings.js";
import { command, formatDuration, parseDuration, safe, shellQuote, stripAnsi } from "../../src/cli/format.js";
import { LiveProgress, renderProgress, SPINNER, type TimedEvent } from "../../src/cli/progress.js";

const HOUR = 3_600_000;
const NOW = Date.parse("2026-11-30T12:00:00Z");
const run = { runId: "job-1" };

const attempt2: TimedEvent[] = [
  { type: "attempt-started", ...run, workflow: "hello", attempt: 2, fromStep: undefined },
  { type: "step-reused", ...run, step: "plan", recordedBy: 1, recordedAt: NOW - 3 * HOUR - 5 * 60_000 },
  { type: "step-reused", ...run, step: "outline", recordedBy: 1, recordedAt: NOW - 20 * 60_000 },
  { type: "step-started", ...run, step: "draft", retry: 0, at: NOW - 1500 },
  { type: "step-succeeded", ...run, step: "draft", durationMs: 1234 },
  { type: "step-started", ...run, step: "publish", retry: 0, at: NOW - 300 },
  { type: "step-failed", ...run, step: "publish", error: { name: "Error", message: "HTTP 503\nretry later" }, at: NOW - 100 },
  { type: "attempt-ended", ...run, attempt: 2, status: "failed", runStatus: "failed", error: { name: "Error", message: "HTTP 503", step: "publish" } },
];

describe("renderProgress", () => {
  it("shows ✓ done with its time, ✗ failed with its error, ↺ reused with the attempt that recorded it", () => {
    const lines = renderProgress(attempt2, { now: NOW });
    expect(lines).toEqual([
      "Run job-1 · hello · attempt 2",
      "  ↺ plan         reused from attempt 1, 3h 05m ago",
      "  ↺ outline      reused from attempt 1",
      "  ✓ draft        1.2s",
      "  ✗ publish      200ms  HTTP 503",
      "✗ attempt 2 failed: HTTP 503",
    ]);
  });

  it("gives a reused record's age only once it is over an hour old", () => {
    const at = (ageMs: number) => renderProgress([{ type: "step-reused", ...run, step: "s", recordedBy: 3, recordedAt: NOW - ageMs }], { now: NOW })[0];
    expect(at(59 * 60_000)).toBe("  ↺ s            reused from attempt 3");
    expect(at(HOUR + 1000)).toBe("  ↺ s            reused from attempt 3, 1h 00m ago");
    expect(at(2 * 24 * HOUR)).toMatch(/reused from attempt 3, 2d 0h ago$/);
  });

  it("shows a running step with a spinner frame on a terminal and … elsewhere, with its time and retry", () => {
    const events: TimedEvent[] = [
      { type: "step-started", ...run, step: "fetch", retry: 0, at: NOW - 4000 },
      { type: "step-started", ...run, step: "fetch", retry: 2, at: NOW - 1000 },
    ];
    expect(renderProgress(events, { now: NOW })).toEqual(["  … fetch        4.0s  retry 2"]);
    expect(renderProgress(events, { now: NOW, frame: 3 })).toEqual([`  ${SPINNER[3]} fetch        4.0s  retry 2`]);
  });

  it("says how a cut-off step was settled: re-driven, found done by its query, compensated by the saga", () => {
    const lines = renderProgress(
      [
        { type: "step-reused", ...run, step: "one", recordedBy: 1, recordedAt: NOW },
        { type: "step-resolved", ...run, step: "two", policy: "redrive", found: "unknown" },
        { type: "step-started", ...run, step: "two", retry: 0 },
        { type: "step-succeeded", ...run, step: "two", durationMs: 60 },
        { type: "step-resolved", ...run, step: "charge", policy: "query", found: "done" },
        { type: "step-resolved", ...run, step: "hotel", policy: "compensate", found: "saga" },
      ],
      { now: NOW },
    );
    expect(lines).toEqual([
      "  ↺ one          reused from attempt 1",
      "  ✓ two          60ms, re-driven (cut off earlier)",
      "  ✓ charge       found done by its query, not run again",
      "  ↶ hotel        compensated",
    ]);
  });

  it("marks a step still running when its attempt ended as failed, with the attempt's error", () => {
    const lines = renderProgress(
      [
        { type: "step-started", ...run, step: "long", retry: 0 },
        {
          type: "attempt-ended",
          ...run,
          attempt: 1,
          status: "cancelled",
          runStatus: "cancelled",
          error: { name: "RunCancelledError", code: "RUN_CANCELLED", message: "cancelled (received SIGINT)", step: "long" },
        },
      ],
      { now: NOW },
    );
    expect(lines[0]).toBe("  ✗ long         RUN_CANCELLED: cancelled (received SIGINT)");
    expect(lines[1]).toBe("✗ attempt 1 cancelled: cancelled (received SIGINT)");
  });

  it("colours only when asked, and keeps recorded control characters off the terminal", () => {
    const plain = renderProgress(attempt2, { now: NOW });
    const coloured = renderProgress(attempt2, { now: NOW, color: true });
    expect(plain.join("\n")).not.toContain("\x1b[");
    expect(coloured.join("\n")).toContain("\x1b[32m✓");
    expect(coloured.map(stripAnsi)).toEqual(plain);
    const hostile = renderProgress([{ type: "step-failed", ...run, step: "x", error: { name: "Error", message: "boom\x1b[2J\x07" } }], { now: NOW })[0]!;
    expect(hostile).not.toContain("\x1b");
    expect(hostile).toContain("\\u001b[2J\\u0007");
  });

  it("cuts lines to a width", () => {
    const [line] = renderProgress([{ type: "step-failed", ...run, step: "x", error: { name: "Error", message: "y".repeat(300) } }], { now: NOW, width: 40 });
    expect([...line!].length).toBe(40);
    expect(line!.endsWith("…")).toBe(true);
  });

  it("ends waiting and escalated attempts with their own glyphs", () => {
    const end = (status: "waiting" | "escalated" | "completed", runStatus = status) =>
      renderProgress([{ type: "attempt-ended", ...run, attempt: 1, status, runStatus }], { now: NOW })[0];
    expect(end("completed")).toBe("✓ attempt 1 completed");
    expect(end("waiting")).toBe("⏸ attempt 1 waiting");
    expect(end("escalated")).toBe("⚠ attempt 1 escalated");
  });
});

class Sink {
  text = "";
  isTTY: boolean;
  columns = 80;
  constructor(tty: boolean) {
    this.isTTY = tty;
  }
  write(chunk: string) {
    this.text += chunk;
    return true;
  }
}

describe("LiveProgress", () => {
  const feed = (live: LiveProgress, events: ProgressEvent[]) => events.forEach((e) => live.onEvent(e));

  it("off a terminal, prints each line once, when it and every line before it are final", () => {
    const sink = new Sink(false);
    const live = new LiveProgress(sink, { tty: false, color: false, now: () => NOW });
    feed(live, [
      { type: "attempt-started", ...run, workflow: "w", attempt: 1, fromStep: undefined },
      { type: "step-started", ...run, step: "a", retry: 0 },
      { type: "step-started", ...run, step: "b", retry: 0 },
      { type: "step-succeeded", ...run, step: "b", durationMs: 5 },
    ]);
    // a still runs, so b (finished) waits behind it: order is kept.
    expect(sink.text).toBe("Run job-1 · w · attempt 1\n");
    feed(live, [{ type: "step-succeeded", ...run, step: "a", durationMs: 9 }]);
    expect(sink.text).toBe("Run job-1 · w · attempt 1\n  ✓ a            9ms\n  ✓ b            5ms\n");
    live.finish();
    expect(sink.text).not.toContain("\x1b");
  });

  it("on a terminal, redraws the running steps in place with a spinner", () => {
    const sink = new Sink(true);
    let now = NOW;
    const live = new LiveProgress(sink, { tty: true, color: false, now: () => now });
    feed(live, [{ type: "step-started", ...run, step: "a", retry: 0 }]);
    expect(sink.text).toBe(`  ${SPINNER[0]} a            0ms\n`);
    now += 2000;
    feed(live, [{ type: "step-succeeded", ...run, step: "a", durationMs: 2000 }]);
    // Cursor up over the live row, clear, then the final line.
    expect(sink.text.endsWith("\x1b[1A\r\x1b[J  ✓ a            2.0s\n")).toBe(true);
    live.finish();
  });
});

describe("format helpers", () => {
  it("parses durations with units only", () => {
    expect(parseDuration("10m")).toBe(600_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("1.5s")).toBe(1500);
    expect(parseDuration("600")).toBeUndefined();
    expect(parseDuration("soon")).toBeUndefined();
  });

  it("formats durations", () => {
    expect([850, 1234, 12_000, 185_000, 2 * HOUR + 14 * 60_000, 3 * 24 * HOUR + 4 * HOUR].map(formatDuration)).toEqual([
      "850ms",
      "1.2s",
      "12s",
      "3m 05s",
      "2h 14m",
      "3d 4h",
    ]);
  });

  it("quotes words for a shell, so a next command can be pasted as it is", () => {
    expect(shellQuote("hello-1")).toBe("hello-1");
    expect(shellQuote(`it's "quoted"; rm -rf /`)).toBe(`'it'\\''s "quoted"; rm -rf /'`);
    expect(command("steplog", "show", "a b")).toBe("steplog show 'a b'");
    expect(safe("a\u202Eb\nc")).toBe("a\\u202eb↵ c");
  });
});
