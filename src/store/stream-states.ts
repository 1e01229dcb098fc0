/**
 * Runs' streams in memory (the memory store's, and the JSONL store's replayed journal): the
 * records of each (run, stream) in seq order. An append is fenced like a step's outcome (the
 * run's lease at the writer's epoch) and must continue the stream's seq; it is applied whole or
 * refused whole.
 */

import type { RunStates } from "./state-machine.js";
import { fenceRefusal } from "./state-machine.js";
import type { StreamRecord } from "./types.js";

export class StreamStates {
  readonly #streams = new Map<string, Map<string, StreamRecord[]>>();

  /** The refusal of an append (a stale fence, a seq out of order), or undefined; nothing is changed when refused. */
  check(runs: RunStates, runId: string, epoch: number, records: readonly StreamRecord[]): Error | undefined {
    const refused = fenceRefusal(runs.get(runId), runId, epoch, "stream write");
    if (refused) return refused;
    const next = new Map<string, number>();
    for (const record of records) {
      const expected = next.get(record.stream) ?? this.#streams.get(runId)?.get(record.stream)?.length ?? 0;
      if (record.runId !== runId || record.seq !== expected) {
        return new Error(`steplog internal: stream ${JSON.stringify(record.stream)} of run ${runId} got record ${record.seq}, expected ${expected}`);
      }
      next.set(record.stream, expected + 1);
    }
    return undefined;
  }

  /** Append records already checked. */
  apply(records: readonly StreamRecord[]): void {
    for (const record of records) {
      let byName = this.#streams.get(record.runId);
      if (!byName) this.#streams.set(record.runId, (byName = new Map()));
      let list = byName.get(record.stream);
      if (!list) byName.set(record.stream, (list = []));
      list.push({ ...record });
    }
  }

  read(runId: string, stream: string, afterSeq: number, limit: number): StreamRecord[] {
    const list = this.#streams.get(runId)?.get(stream) ?? [];
    return list.slice(Math.max(0, afterSeq + 1), Math.max(0, afterSeq + 1) + limit).map((r) => ({ ...r }));
  }

  names(runId: string): string[] {
    return [...(this.#streams.get(runId)?.keys() ?? [])].sort();
  }

  /** Forget a run's streams (its records deleted). */
  drop(runId: string): void {
    this.#streams.delete(runId);
  }
}
