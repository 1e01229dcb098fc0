/**
 * engine.readStream(id, name, { from | after }): a run's stream as an async iterable of items,
 * read from its records (steps/stream-view.ts): the standing chunks from `from` on, then,
 * following the run, each chunk as it is committed. A reset record that drops the stream below
 * what the reader was given becomes a `reset` item. Each item carries its record's seq: a reader
 * that resumes `after` it gets the state at that seq rebuilt from the records and then every
 * record after it as a follower would have (a reset made while it was away included). It ends
 * once the stream is closed or the run has ended (and every record is read); woken by writes in
 * this process, it polls for writes in others.
 */

import { InvalidOptionError, RunNotFoundError } from "../base/errors.js";
import { checkKnownKeys, type KnownKeys } from "../base/options.js";
import type { Payloads } from "../payloads/payloads.js";
import { redact, type RedactRule } from "../payloads/redact.js";
import type { RuntimeStore } from "../store/runtime.js";
import { ENDED_STATUSES, type StreamRecord } from "../store/types.js";
import { StreamView } from "../steps/stream-view.js";
import { onStreamWrite } from "../steps/stream-wakes.js";
import { checkName } from "../workflow/names.js";

/**
 * One item of a stream: a chunk at its offset, or a reset (the chunks from `offset` on were
 * superseded: drop them). `seq` is the record's place in the stream's log: pass the last one
 * shown as `after` to resume.
 */
export type StreamItem = { type: "chunk"; offset: number; chunk: unknown; seq: number } | { type: "reset"; offset: number; seq: number };

export interface ReadStreamOptions {
  /** The first offset to read (inclusive; offsets count chunks from 0). Default 0. Not with `after`. */
  from?: number;
  /** Resume after the item with this seq (exclusive): what followed it, resets included. Not with `from`. */
  after?: number;
  /** Follow the run until the stream is closed or the run has ended. Default true; false: what is recorded now, then end. */
  follow?: boolean;
  /** How often to look for writes made by other processes, in ms. Default 250. */
  pollMs?: number;
  /** How long to wait for a run not yet recorded (one being started elsewhere), in ms, looking every `pollMs`. Default 0: RUN_NOT_FOUND at once. */
  waitForRunMs?: number;
  /** Stop reading (the iteration ends) when it aborts. */
  signal?: AbortSignal;
  /** Pass each chunk through the engine's `redact` rules (as get(id, { redact: true }) does a step's value). Default false. */
  redact?: boolean;
}

export const READ_STREAM_KEYS = {
  from: true,
  after: true,
  follow: true,
  pollMs: true,
  waitForRunMs: true,
  signal: true,
  redact: true,
} satisfies KnownKeys<ReadStreamOptions>;

const PAGE = 1000;

/** Check what readStream was given (before anything is read). */
export function checkReadStream(id: string, name: string, options: ReadStreamOptions): void {
  checkName("run id", id);
  checkName("stream name", name);
  checkKnownKeys("readStream", options, READ_STREAM_KEYS);
  const { from, after, pollMs, waitForRunMs } = options;
  if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) {
    throw new InvalidOptionError(`readStream: from must be a whole number of 0 or more (an offset), not ${String(from)}.`, { runId: id });
  }
  if (after !== undefined && (!Number.isSafeInteger(after) || after < 0)) {
    throw new InvalidOptionError(`readStream: after must be a whole number of 0 or more (an item's seq), not ${String(after)}.`, { runId: id });
  }
  if (waitForRunMs !== undefined && (!Number.isFinite(waitForRunMs) || waitForRunMs < 0)) {
    throw new InvalidOptionError(`readStream: waitForRunMs must be a number of milliseconds of 0 or more, not ${String(waitForRunMs)}.`, { runId: id });
  }
  if (from !== undefined && after !== undefined) {
    throw new InvalidOptionError(
      `readStream: from and after were both given; pass one: after (the seq of the last item shown) to resume, from (an offset) to start at a chunk.`,
      { runId: id },
    );
  }
  if (pollMs !== undefined && (!Number.isFinite(pollMs) || pollMs <= 0)) {
    throw new InvalidOptionError(`readStream: pollMs must be a number of milliseconds above 0, not ${String(pollMs)}.`, { runId: id });
  }
}

export async function* readStream(
  store: RuntimeStore,
  payloads: Payloads,
  id: string,
  name: string,
  options: ReadStreamOptions,
  rule?: RedactRule,
): AsyncGenerator<StreamItem> {
  // Shown redacted when asked (an engine without rules shows chunks unchanged).
  const chunkItem = async (record: StreamRecord): Promise<StreamItem> => {
    const chunk = await payloads.decode(record.chunk!);
    return { type: "chunk", offset: record.offset, chunk: options.redact ? redact(chunk, rule) : chunk, seq: record.seq };
  };
  const follow = options.follow ?? true;
  const pollMs = options.pollMs ?? 250;
  const signal = options.signal;
  if (!(await runRecorded(store, id, options.waitForRunMs ?? 0, pollMs, signal))) {
    if (signal?.aborted) return;
    throw new RunNotFoundError(id, store.location);
  }
  const view = new StreamView();
  // The offset the reader has been given everything before (it asked from there).
  let next = options.from ?? 0;
  // Resuming: the records up to `after` are what the reader was given; the loop rebuilds it from them.
  const after = options.after ?? -1;
  let woken = false;
  // Whether what is recorded now has been read once (a reader that does not follow ends then).
  let readOnce = options.after === undefined;
  const stop = onStreamWrite(id, () => (woken = true));
  try {
    // Catch up (not when resuming): the standing chunks from `from` on.
    if (readOnce) {
      await readNew(store, id, name, view);
      for (const record of view.live.slice(next)) {
        yield await chunkItem(record);
        next = record.offset + 1;
      }
    }
    for (;;) {
      if (view.closed || (!follow && readOnce) || signal?.aborted) return;
      readOnce = true;
      // The run's status before its records: an ending is committed after every record of its attempt.
      const run = await store.loadRunRow(id);
      const ended = run === undefined || ENDED_STATUSES.includes(run.status);
      woken = false;
      const records = await readNew(store, id, name, view, true);
      for (const record of records) {
        if (record.seq <= after) {
          // Given before the reader went away: the standing chunks as they were at that seq.
          if (record.kind === "chunk") next = record.offset + 1;
          else if (record.kind === "reset") next = Math.min(next, record.offset);
        } else if (record.kind === "reset" && record.offset < next) {
          next = record.offset;
          yield { type: "reset", offset: record.offset, seq: record.seq };
        } else if (record.kind === "chunk" && record.offset === next && view.live[record.offset] === record) {
          next++;
          yield await chunkItem(record);
        }
      }
      if (records.length > 0) continue;
      if (ended) return;
      if (!woken) await pause(id, pollMs, signal);
    }
  } finally {
    stop();
  }
}

/** Whether the run is recorded, looking every `pollMs` for up to `waitMs` (a run being started elsewhere may not be yet). */
async function runRecorded(store: RuntimeStore, id: string, waitMs: number, pollMs: number, signal: AbortSignal | undefined): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    if ((await store.loadRunRow(id)) !== undefined) return true;
    const left = until - Date.now();
    if (left <= 0 || signal?.aborted) return false;
    await pause(id, Math.min(pollMs, left), signal);
  }
}

/** Apply the stream's records after what `view` holds; returns them when asked to (else an empty list). */
async function readNew(store: RuntimeStore, id: string, name: string, view: StreamView, keep = false): Promise<StreamRecord[]> {
  const all: StreamRecord[] = [];
  for (;;) {
    const page = await store.readStream(id, name, view.lastSeq, PAGE);
    for (const record of page) view.apply(record);
    if (keep) all.push(...page);
    if (page.length < PAGE) return all;
  }
}

/** Wait for a write to the run in this process, `pollMs`, or the signal, whichever comes first. */
function pause(id: string, pollMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stopWake();
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, pollMs);
    const stopWake = onStreamWrite(id, done);
    signal?.addEventListener("abort", done);
  });
}
