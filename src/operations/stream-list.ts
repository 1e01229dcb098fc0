/**
 * engine.streams(id): the run's streams as they stand (name, standing chunks, closed), for a
 * page that lists them (steplog ui) before it reads one with engine.readStream.
 */

import { RunNotFoundError } from "../base/errors.js";
import type { RuntimeStore } from "../store/runtime.js";
import { StreamView } from "../steps/stream-view.js";

/** One of a run's streams as it stands now. */
export interface StreamInfo {
  name: string;
  /** The standing chunks (a reset dropped the superseded ones): the next chunk's offset. */
  chunks: number;
  /** Whether `close()` was called (and no later redo of its step opened it again). */
  closed: boolean;
}

const PAGE = 1000;

export async function listStreams(store: RuntimeStore, id: string): Promise<StreamInfo[]> {
  if ((await store.loadRunRow(id)) === undefined) throw new RunNotFoundError(id, store.location);
  const out: StreamInfo[] = [];
  for (const name of await store.streamNames(id)) {
    const view = new StreamView();
    for (;;) {
      const page = await store.readStream(id, name, view.lastSeq, PAGE);
      for (const record of page) view.apply(record);
      if (page.length < PAGE) break;
    }
    out.push({ name, chunks: view.live.length, closed: view.closed });
  }
  return out;
}
