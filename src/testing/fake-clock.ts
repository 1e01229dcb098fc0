/** A clock a test moves by hand: for timers, waits and deadlines without real sleeps. */

import type { Clock } from "../base/clock.js";

export interface FakeClock extends Clock {
  /** Move the clock forward by `ms`. */
  advance(ms: number): void;
  /** Set the clock to a time (ms since the epoch, or a Date). */
  set(time: number | Date): void;
}

export function fakeClock(start: number | Date = Date.UTC(2030, 0, 1)): FakeClock {
  let now = typeof start === "number" ? start : start.getTime();
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    set: (time) => {
      now = typeof time === "number" ? time : time.getTime();
    },
  };
}
