/**
 * How an attempt ends early (a cancel, a deadline, a stop, an escalation, a park, a lost lease):
 * its reason, its abort signal, and who is told once nothing is in flight any more. Steps read
 * the reason before they start and between calls; once it is set no step starts.
 */

import { AttemptEndedError, RunCancelledError, RunTimedOutError, type SteplogError } from "../base/errors.js";
import type { AttemptEnding as Ending } from "../store/types.js";
import type { WaitingFor } from "../workflow/step-resolution.js";
import type { Clock } from "../base/clock.js";
import type { AttemptPlan } from "./attempt-plan.js";

export interface EndReason {
  ending: Ending | "lease-lost";
  error: SteplogError;
}

/**
 * The keys of the steps in flight: a key per entry, one entry per add (a resolution and the run it
 * leads to each hold the key until they end). perf: the first in a field of its own, the rest in
 * an array made when a second is added (a Set rebuilds its table each time it empties).
 */
export class InFlight {
  #first: string | undefined = undefined;
  #rest: string[] | undefined = undefined;

  get size(): number {
    return this.#first === undefined ? 0 : 1 + (this.#rest?.length ?? 0);
  }

  add(key: string): void {
    if (this.#first === undefined) this.#first = key;
    else (this.#rest ??= []).push(key);
  }

  delete(key: string): void {
    const rest = this.#rest;
    if (this.#first === key) {
      this.#first = rest !== undefined && rest.length > 0 ? rest.pop() : undefined;
      return;
    }
    if (rest === undefined) return;
    const at = rest.lastIndexOf(key);
    if (at === -1) return;
    rest[at] = rest[rest.length - 1]!;
    rest.pop();
  }

  /** The keys in flight, each once, in the order they entered, joined by "\n" (as a stream record names them); null when none is. */
  joined(): string | null {
    if (this.#first === undefined) return null;
    return this.#rest === undefined || this.#rest.length === 0 ? this.#first : [...new Set([this.#first, ...this.#rest])].join("\n");
  }

  /** The keys in flight other than `key`, each once. */
  others(key: string): string[] {
    if (this.#first === undefined) return [];
    return [...new Set([this.#first, ...(this.#rest ?? [])])].filter((k) => k !== key);
  }
}

/**
 * The ending's fields are read-only outside it; its methods write them. perf: plain fields, not
 * getters (read by every step, often from code not optimized yet).
 */
export class AttemptEnding {
  /** Why the attempt ended early; undefined while it goes on. */
  readonly reason: EndReason | undefined = undefined;
  /** What the run parked on, when the attempt ends `waiting`. */
  readonly parkedOn: WaitingFor | undefined = undefined;
  /** The signal's controller, made when first asked for (perf: most attempts never look at it). */
  #controller: AbortController | undefined = undefined;
  /** Told once the attempt has ended early and nothing is in flight any more (whenEndedEarly). */
  #onEndedEarly: (() => void) | undefined = undefined;
  /** What is in flight: the steps under way, and the resolutions and child runs they wait for. */
  readonly inFlight = new InFlight();

  constructor(
    readonly runId: string,
    readonly attempt: number,
  ) {}

  /** The attempt's abort signal (`ctx.signal`): aborted when the attempt ends early, with the reason. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.reason) this.#controller.abort(this.reason.error);
    }
    return this.#controller.signal;
  }

  /** End the attempt early: no step starts after this, and the signal is aborted. The first reason stands. */
  endWith(ending: EndReason["ending"], error: SteplogError): void {
    if (this.reason) return;
    (this as { reason: EndReason }).reason = { ending, error };
    this.#controller?.abort(error);
    this.checkEarlyEnd();
  }

  /** End the attempt with `error` and throw it: the call it is in goes no further. */
  stopWith(error: SteplogError, ending: "stopped" | "escalated" = "stopped"): never {
    this.endWith(ending, error);
    throw error;
  }

  /** The run parks on `waitingFor`: the attempt ends `waiting` with `error`. */
  park(waitingFor: WaitingFor, error: SteplogError): void {
    (this as { parkedOn: WaitingFor }).parkedOn = waitingFor;
    this.endWith("waiting", error);
  }

  /** A call left flight: if the attempt has ended early and nothing else is in flight, say so. */
  checkEarlyEnd(): void {
    if (this.reason && this.inFlight.size === 0) this.#onEndedEarly?.();
  }

  /**
   * Call `then` once the attempt has ended early and nothing is in flight (now, if it has).
   * perf: a callback rather than a promise raced against the code's.
   */
  whenEndedEarly(then: () => void): void {
    this.#onEndedEarly = then;
    this.checkEarlyEnd();
  }

  /** Throws ATTEMPT_ENDED once the attempt has ended: no call enters after that. */
  assertRunning(): void {
    if (this.reason) throw new AttemptEndedError(this.runId, this.attempt, this.reason.error.message);
  }

  /**
   * End the attempt at the plan's deadline (RUN_TIMED_OUT) or when its abort signal fires
   * (RUN_CANCELLED), naming the last step entered; returns what stops watching.
   */
  watchDeadlineAndSignal(plan: Pick<AttemptPlan, "deadline" | "signal">, clock: Clock, lastEntered: () => string | undefined): Array<() => void> {
    const cleanups: Array<() => void> = [];
    const { deadline, signal } = plan;
    if (deadline !== undefined) {
      // The deadline is a time of day: Node's timers run on a monotonic clock that stops while
      // the machine sleeps, so the wall clock is read again at least every second.
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        const left = deadline - clock.now();
        if (left <= 0) return this.endWith("timed-out", new RunTimedOutError(this.runId, deadline, lastEntered()));
        timer = setTimeout(check, Math.min(left, 1000));
      };
      check();
      cleanups.push(() => clearTimeout(timer));
    }
    if (signal) {
      const onAbort = () => {
        const reason = signal.reason instanceof Error ? signal.reason.message : signal.reason === undefined ? "signal aborted" : String(signal.reason);
        this.endWith("cancelled", new RunCancelledError(this.runId, lastEntered(), reason));
      };
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        cleanups.push(() => signal.removeEventListener("abort", onAbort));
      }
    }
    return cleanups;
  }
}
