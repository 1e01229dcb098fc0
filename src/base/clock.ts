/** The wall clock steplog reads, replaceable in tests (createEngine({ clock }), fakeClock). */

export interface Clock {
  /** Wall-clock milliseconds since the epoch: deadlines are times of day, so time asleep counts. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
