/**
 * ctx.stream(name): one attempt's writers of the run's streams. Each chunk is encoded (bounded by
 * maxValueBytes) and sealed by the codec like a value, and appended to the store with the step
 * log's other writes (group commit): the step path has the writers queue what they were given
 * before it queues an intent or an outcome (`queued`, `idle`), so a chunk is durable no later
 * than the step that wrote it, and the attempt's ending waits for them all.
 *
 * perf: the records made while the current microtasks run (a burst of chunks written in one
 * turn) are gathered into one append, given to the store once they have run or before the step
 * log's next write, whichever comes first: one queued write, one promise and one fence check a
 * burst instead of a chunk.
 *
 * On a continue, a stream's records are read first (once, when the attempt first names it):
 * - a chunk written by a step that this attempt runs anew (redoes) is superseded, with every
 *   chunk after it: a `reset` record drops the stream back to its offset;
 * - a chunk written outside any step is written again by the code's replay: the replay's writes
 *   outside a step are matched in order with the standing ones and not written twice (the same
 *   for a close).
 */

import { StreamClosedError, type SteplogErrorDetails } from "../base/errors.js";
import { encodeValue } from "../payloads/values.js";
import { checkName } from "../workflow/names.js";
import type { StreamRecord } from "../store/types.js";
import type { StreamWriter } from "../workflow/context.js";
import type { AttemptState } from "./state.js";
import { stepsOf, StreamView } from "./stream-view.js";
import { streamWritten } from "./stream-wakes.js";

/** Records read from the store a page at a time. */
const PAGE = 1000;

/** Runs what is given to its `then` once the current microtasks have run. */
const SETTLED: Promise<void> = Promise.resolve();

class OneStream {
  view = new StreamView();
  /** What a chunk is called in an error message. */
  readonly what: string;
  loaded = false;
  /** Closed by this attempt's code (a later write throws at once). */
  closedHere = false;
  /** Offsets of standing chunks written outside any step by an earlier attempt, not yet met again by the replay. */
  outside: number[] = [];
  /** Whether the earlier attempts' close is still to be met by the replay. */
  closeToMeet = false;
  constructor(readonly name: string) {
    this.what = `A chunk of stream ${JSON.stringify(name)}`;
  }
}

export class AttemptStreams {
  readonly #state: AttemptState;
  readonly #streams = new Map<string, OneStream>();
  /** Steps this attempt ran anew since its first ctx.stream. */
  readonly #ranAnew = new Set<string>();
  /** The work not yet queued with the store, in order; undefined when there is none. */
  #chain: Promise<void> | undefined = undefined;
  /** Records made and not yet given to the store (one append, in order); undefined when there are none. */
  #gathered: StreamRecord[] | undefined = undefined;
  readonly #limits: { maxBytes: number };
  readonly #details: SteplogErrorDetails;

  constructor(state: AttemptState) {
    this.#state = state;
    this.#limits = { maxBytes: state.payloads.maxBytes };
    this.#details = { runId: state.runId };
  }

  /**
   * Queue with the store the records gathered so far (before a write of the step log, which must
   * come after them). False while a write is not ready to be queued yet (a stream being read, a
   * chunk being sealed): wait for `idle()` first.
   */
  queued(): boolean {
    if (this.#gathered !== undefined) this.#appendGathered();
    return this.#chain === undefined;
  }

  /** Resolves once every write given so far is queued with the store (never rejects). */
  idle(): Promise<void> {
    return this.#chain === undefined ? Promise.resolve(this.#appendGathered()) : this.#chain.then(this.#appendGathered, this.#appendGathered);
  }

  open(name: string): StreamWriter {
    checkName("stream name", name);
    let stream = this.#streams.get(name);
    if (!stream) {
      this.#streams.set(name, (stream = new OneStream(name)));
      const s = stream;
      // The run's first attempt finds no records: nothing to read.
      if (this.#state.number === 1) s.loaded = true;
      else this.#do(() => this.#load(s));
    }
    const s = stream;
    return {
      write: (chunk) => this.#write(s, chunk),
      close: () => this.#close(s),
    };
  }

  /** A step runs anew (before its intent): the chunks it wrote in an earlier attempt are superseded, and all after them. */
  redo(key: string): void {
    this.#ranAnew.add(key);
    for (const stream of this.#streams.values()) this.#do(() => this.#resetFor(stream, (steps) => steps.includes(key)));
  }

  #write(stream: OneStream, chunk: unknown): void {
    const state = this.#state;
    state.ending.assertRunning();
    if (stream.closedHere) throw new StreamClosedError(state.runId, stream.name);
    const plain = encodeValue(chunk, stream.what, this.#limits, this.#details);
    const steps = state.inFlight.joined();
    // perf: nothing before it (a burst's usual case): written now, without a closure a chunk.
    if (this.#chain === undefined) {
      let result: undefined | Promise<void>;
      try {
        result = this.#writeChunk(stream, plain, steps);
      } catch (error) {
        state.writes.track(Promise.reject(error));
        return;
      }
      if (result !== undefined) this.#hold(result);
      return;
    }
    this.#hold(this.#chain.then(() => this.#writeChunk(stream, plain, steps)));
  }

  #writeChunk(stream: OneStream, plain: string, steps: string | null): undefined | Promise<void> {
    if (steps === null && stream.outside.length > 0) {
      stream.outside.shift(); // the replay of a chunk written outside a step: it stands already
      return undefined;
    }
    const state = this.#state;
    if (stream.view.closed) throw new StreamClosedError(state.runId, stream.name);
    const sealed = state.payloads.seal(plain);
    if (typeof sealed === "string") return this.#append(stream, "chunk", sealed, steps);
    return sealed.then((text) => this.#append(stream, "chunk", text, steps));
  }

  #close(stream: OneStream): void {
    const state = this.#state;
    state.ending.assertRunning();
    if (stream.closedHere) throw new StreamClosedError(state.runId, stream.name);
    stream.closedHere = true;
    const steps = state.inFlight.joined();
    this.#do(() => {
      if (stream.closeToMeet && stream.view.closed) {
        stream.closeToMeet = false;
        return undefined;
      }
      if (stream.view.closed) throw new StreamClosedError(state.runId, stream.name);
      return this.#append(stream, "close", null, steps);
    });
  }

  /** Read the stream's records (an earlier attempt's), then supersede what a step this attempt ran anew wrote. */
  async #load(stream: OneStream): Promise<void> {
    const state = this.#state;
    const store = state.writes.store;
    for (;;) {
      const page = await store.readStream(state.runId, stream.name, stream.view.lastSeq, PAGE);
      for (const record of page) stream.view.apply(record);
      if (page.length < PAGE) break;
    }
    stream.loaded = true;
    stream.outside = stream.view.live.filter((r) => r.step === null).map((r) => r.offset);
    stream.closeToMeet = stream.view.closed;
    const order = state.order;
    this.#resetFor(stream, (steps) => steps.some((key) => this.#ranAnew.has(key) || order.latestRow(key)?.attempt === state.number));
  }

  /** Drop the stream back to its first standing chunk written by a step `redone` names. */
  #resetFor(stream: OneStream, redone: (steps: string[]) => boolean): void {
    const first = stream.view.live.find((r) => r.attempt !== this.#state.number && r.step !== null && redone(stepsOf(r)!));
    if (first === undefined) return;
    const offset = first.offset;
    this.#append(stream, "reset", null, null, offset);
    stream.outside = stream.outside.filter((o) => o < offset);
    stream.closeToMeet = false;
  }

  /** Make the next record of `stream` and gather it for the next append. `steps`: the keys in flight, joined by "\n". */
  #append(stream: OneStream, kind: StreamRecord["kind"], chunk: string | null, steps: string | null, offset = stream.view.live.length): undefined {
    const state = this.#state;
    const record: StreamRecord = {
      runId: state.runId,
      stream: stream.name,
      seq: stream.view.lastSeq + 1,
      kind,
      offset,
      chunk,
      step: steps,
      attempt: state.number,
      at: state.clock.now(),
    };
    stream.view.apply(record);
    if (this.#gathered !== undefined) {
      this.#gathered.push(record);
      return undefined;
    }
    this.#gathered = [record];
    // The ending waits for the append from now on, though it is given to the store later.
    state.writes.reserve();
    void SETTLED.then(this.#appendGathered);
    return undefined;
  }

  /** Give the store the gathered records as one append (made once: a reaction and a handler). */
  readonly #appendGathered = (): undefined => {
    const records = this.#gathered;
    if (records === undefined) return undefined;
    this.#gathered = undefined;
    const writes = this.#state.writes;
    let appended: Promise<void>;
    try {
      appended = writes.store.appendStream(writes.fence, records);
    } catch (error) {
      appended = Promise.reject(error);
    }
    writes.trackReserved(appended.then(this.#committed));
    return undefined;
  };

  readonly #committed = (): void => streamWritten(this.#state.runId);

  /** Run `op` now if nothing is before it, else after what is; a promise it returns holds the ones after it. */
  #do(op: () => void | undefined | Promise<void>): void {
    if (this.#chain === undefined) {
      let result: void | Promise<void>;
      try {
        result = op();
      } catch (error) {
        this.#state.writes.track(Promise.reject(error));
        return;
      }
      if (result !== undefined) this.#hold(result);
      return;
    }
    this.#hold(this.#chain.then(op));
  }

  #hold(work: Promise<void>): void {
    const mine: Promise<void> = work.then(
      () => {
        if (this.#chain === mine) this.#chain = undefined;
      },
      (error: unknown) => {
        if (this.#chain === mine) this.#chain = undefined;
        throw error;
      },
    );
    this.#chain = mine;
    this.#state.writes.track(mine);
  }
}
