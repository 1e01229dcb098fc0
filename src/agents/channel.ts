/**
 * Channel: a queue read as an async iterable, for a streamed model turn whose parts are handed
 * on as they come while the turn is recorded (the OpenAI Agents SDK's streamed responses).
 */

/** A queue read as an async iterable: the live part of a streamed turn, handed on as it comes. */
export class Channel<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private ended: { error?: unknown } | undefined;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  end(error?: unknown): void {
    this.ended = error === undefined ? {} : { error };
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.ended) {
        if ("error" in this.ended) throw this.ended.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
