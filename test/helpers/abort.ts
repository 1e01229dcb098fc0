/** A promise that rejects with the signal's reason once it aborts (at once if it has): a step that runs until cancelled. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) =>
    signal.aborted ? reject(signal.reason) : signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  );
}
