/**
 * A stream as its records leave it: the chunks that stand (a reset drops the chunks from its
 * offset on), and whether it is closed. The attempt's writer (streams.ts) and the reader
 * (engine.readStream) both replay records through it.
 */

import type { StreamRecord } from "../store/types.js";

/** The step keys a record names (several joined by "\n"), or null outside any step. */
export function stepsOf(record: Pick<StreamRecord, "step">): string[] | null {
  return record.step === null ? null : record.step.split("\n");
}

export class StreamView {
  /** The standing chunks by offset: the record that wrote each. */
  readonly live: StreamRecord[] = [];
  closed = false;
  /** The seq of the last record applied (-1: none). */
  lastSeq = -1;

  apply(record: StreamRecord): void {
    this.lastSeq = record.seq;
    if (record.kind === "chunk") {
      // perf: the usual chunk comes right after the last; setting `length` costs even when it stays.
      if (record.offset < this.live.length) this.live.length = record.offset;
      this.live.push(record);
    } else if (record.kind === "reset") {
      this.live.length = Math.min(this.live.length, record.offset);
      this.closed = false;
    } else {
      this.closed = true;
    }
  }
}
