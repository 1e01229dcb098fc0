/** Streams (ctx.stream, engine.readStream): a write after close, a store that keeps no streams. */

import { SteplogError } from "./steplog-error.js";
import { q } from "./quote.js";

export class StreamClosedError extends SteplogError {
  override name = "StreamClosedError";
  constructor(runId: string, stream: string) {
    super(
      "STREAM_CLOSED",
      `Run ${q(runId)}: stream ${q(stream)} was closed, so nothing more can be written to it. Nothing was recorded; write before close(), or to another stream name.`,
      { runId },
    );
  }
}

export class StreamsUnsupportedError extends SteplogError {
  override name = "StreamsUnsupportedError";
  constructor(kind: string, location: string, what: string, runId?: string) {
    super(
      "STREAMS_UNSUPPORTED",
      `The ${kind} store at ${location} keeps no streams (it has no ${what}), so ${runId === undefined ? "this call" : `run ${q(runId)}'s stream`} cannot be ${what === "appendStream" ? "written" : what === "streamNames" ? "listed" : "read"}. Nothing was recorded; use steplog's SQLite, Postgres, JSONL or memory store, or implement appendStream, readStream and streamNames (docs/stores.md).`,
      runId === undefined ? {} : { runId },
    );
  }
}
