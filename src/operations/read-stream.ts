/**
 * engine.readStream(id, name, { from }): a run's stream as an async iterable of items, read from
 * its records (steps/stream-view.ts): the standing chunks from `from` on, then, following the
 * run, each chunk as it is committed. A reset record that drops the stream below what the reader
 * was given becomes a `reset` item. It ends once the stream is closed or the run has ended (and
 * every record is read); woken by writes in this process, it polls for writes in others.
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

/** One item of a stream: a chunk at its offset, or a reset (the chunks from `offset` on were superseded: drop them). */
export type StreamItem = { type: "chunk"; offset: number; chunk: unknown } | { type: "reset"; offset: number };

export interface ReadStreamOptions {
  /** The first offset to read (inclusive; offsets count chunks from 0). Default 0. */
  from?: number;
  /** Follow the run until the stream is closed or the run has ended. Default true; false: what is recorded now, then end. */
  follow?: boolean;
  /** How often to look for writes made by other processes, in ms. Default 250. */
  pollMs?: number;
  /** Stop reading (the iteration ends) when it aborts. */
  signal?: AbortSignal;
  /** Pass each chunk through the engine's `redact` rules (as get(id, { redact: true }) does a step's value). Default false. */
  redact?: boolean;
}

export const READ_STREAM_KEYS = { from: true, follow: true, pollMs: true, signal: true, redact: true } satisfies KnownKeys<ReadStreamOptions>;

const PAGE = 1000;

/** Check what readStream was given (before anything is read). */
export function checkReadStream(id: string, name: string, options: ReadStreamOptions): void {
  checkName("run id", id);
  checkName("stream name", name);
  checkKnownKeys("readStream", options, READ_STREAM_KEYS);
  const { from, pollMs } = options;
  if (from !== undefined && (!Number.isSafeInteger(from) || from < 0)) {
    throw new InvalidOptionError(`readStream: from must be a whole number of 0 or more (an offset), not ${String(from)}.`, { runId: id });
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
    return { type: "chunk", offset: record.offset, chunk: options.redact ? redact(chunk, rule) : chunk };
  };
  const follow = options.follow ?? true;
  const pollMs = options.pollMs ?? 250;
  const signal = options.signal;
  if ((await store.loadRunRow(id)) === undefined) throw new RunNotFoundError(id, store.location);
  const view = new StreamView();
  // The offset the reader has been given everything before (it asked from there).
  let next = options.from ?? 0;
  let woken = false;
  const stop = onStreamWrite(id, () => (woken = true));
  try {
    // Catch up: the standing chunks from `from` on.
    await readNew(store, id, name, view);
    for (const record of view.live.slice(next)) {
      yield await chunkItem(record);
      next = record.offset + 1;
    }
    for (;;) {
      if (view.closed || !follow || signal?.aborted) return;
      // The run's status before its records: an ending is committed after every record of its attempt.
      const run = await store.loadRunRow(id);
      const ended = run === undefined || ENDED_STATUSES.includes(run.status);
      woken = false;
      const records = await readNew(store, id, name, view, true);
      for (const record of records) {
        if (record.kind === "reset" && record.offset < next) {
          next = record.offset;
          yield { type: "reset", offset: record.offset };
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
