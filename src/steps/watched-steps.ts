/**
 * The promise ctx.step hands the workflow's code, watched for whether the code observed it. A
 * step that fails while nothing awaits it, catches it or passes it on (a forgotten `await`)
 * would let its attempt end `completed`, as if it had succeeded; the attempt checks for such a
 * failure before it records that ending (attempt.ts).
 *
 * Observed means a handler was attached, at any time before the attempt ends. Every way of
 * attaching one goes through the promise's `then`: `.catch` and `.finally` call it, and so do
 * `await`, `Promise.all`/`allSettled`/`race` and an async function returning it, because a
 * StepPromise is not a plain Promise (for a plain one, `await` skips `then`). So `then` marks it.
 */

import { UnawaitedStepFailedError } from "../base/errors.js";

export class StepPromise<T = unknown> extends Promise<T> {
  /** What `then`, `catch` and `finally` return is a plain promise: only the one handed out is watched. */
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  /** A handler was attached: the code awaited it, caught it or passed it on (false on the prototype). */
  declare observed: boolean;

  override then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.observed = true;
    return super.then(onFulfilled, onRejected);
  }
}
StepPromise.prototype.observed = false;

const baseThen = Promise.prototype.then;

/** A step's failure and the promise the code was handed for it. */
interface StepFailure {
  /** The step's key (its name, when it failed before it had one). */
  step: string;
  error: unknown;
  promise: { observed: boolean };
}

/** The steps of one attempt as the code was handed them: how many are unsettled, and which failed. */
export class WatchedSteps {
  /** Step promises handed out and not yet settled: the attempt waits for them before it judges its ending. */
  unsettled = 0;
  /** Made on the first failure (most attempts have none). */
  #failures: StepFailure[] | undefined = undefined;

  /**
   * The promise to hand the code for a step whose own promise is `inner`. `stepOf` names the
   * step of a failure (its key, from the error) or undefined, when `name` is used.
   */
  watch<T>(inner: Promise<T>, name: string, stepOf: (error: unknown) => string | undefined): StepPromise<T> {
    // The step's own promise made watchable in place (no second promise): its `then` is StepPromise's.
    const handOut = Object.setPrototypeOf(inner, StepPromise.prototype) as StepPromise<T>;
    this.unsettled++;
    // The base `then` attaches without marking the promise observed; this handler also keeps its
    // failure from being an unhandled rejection for Node: steplog reports it itself.
    void baseThen.call(handOut, this.#settled, (error: unknown) => {
      this.unsettled--;
      (this.#failures ??= []).push({ step: stepOf(error) ?? name, error, promise: handOut });
    });
    return handOut;
  }

  readonly #settled = () => {
    this.unsettled--;
  };

  /**
   * What ends an attempt that would otherwise complete when a step failed and no handler was
   * attached to its promise: UNAWAITED_STEP_FAILED naming the first such step (and the others).
   * Undefined when there is none.
   */
  unobservedFailure(runId: string): UnawaitedStepFailedError | undefined {
    const [first, ...others] = this.#failures?.filter((f) => !f.promise.observed) ?? [];
    return (
      first &&
      new UnawaitedStepFailedError(
        runId,
        first.step,
        first.error,
        others.map((f) => f.step),
      )
    );
  }
}
