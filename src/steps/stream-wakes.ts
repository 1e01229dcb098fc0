/**
 * Readers of a run's streams in this process (engine.readStream) are woken when an attempt in
 * this process has committed records to one of the run's streams: they read again at once
 * instead of at their next poll. Keyed by run id (a wake for a same-named run in another store
 * only costs a read).
 */

const waiting = new Map<string, Set<() => void>>();

/** Call `wake` at the next commit of a record of run `runId`; returns what stops listening. */
export function onStreamWrite(runId: string, wake: () => void): () => void {
  let set = waiting.get(runId);
  if (!set) waiting.set(runId, (set = new Set()));
  set.add(wake);
  return () => {
    set.delete(wake);
    if (set.size === 0 && waiting.get(runId) === set) waiting.delete(runId);
  };
}

/** Records of run `runId` were committed. */
export function streamWritten(runId: string): void {
  const set = waiting.get(runId);
  if (set) for (const wake of [...set]) wake();
}
