/**
 * createEngine's options checked and turned into what the engine runs with: the store, wrapped
 * once in its runtime wrapper, and the EngineSettings every attempt is given. Apart from the
 * engine so the rules for a valid lease, value limit and clock read in one place.
 */

import { systemClock, type Clock } from "../base/clock.js";
import { InvalidOptionError } from "../base/errors.js";
import { checkKnownKeys } from "../base/options.js";
import { Payloads } from "../payloads/payloads.js";
import { DEFAULT_MAX_VALUE_BYTES } from "../payloads/values.js";
import type { EngineSettings } from "../steps/attempt-settings.js";
import { runtimeStore, type RuntimeStore } from "../store/runtime.js";
import { sqliteStore } from "../store/sqlite/store.js";
import type { Store } from "../store/types.js";
import { ENGINE_KEYS, TEST_HOOKS, type EngineOptions } from "./api.js";
import { loadTracing } from "./load-tracing.js";
import { checkRetention, type Retention } from "./retention-options.js";

/** What createEngine's options configure: the store as given, its runtime wrapper, and the settings. */
export interface EngineSetup {
  store: Store;
  runtime: RuntimeStore;
  settings: EngineSettings;
  retention: Retention | undefined;
}

/** A clock that reads whole ms (a clock made from performance.now() reads fractions). */
function wholeMs(clock: Clock): Clock {
  return clock === systemClock ? clock : { now: () => Math.floor(clock.now()) };
}

/** Check createEngine's options (unknown keys, leaseMs, maxValueBytes) and build the engine's settings from them. */
export function engineSetup(options: EngineOptions): EngineSetup {
  checkKnownKeys("createEngine", options, ENGINE_KEYS);
  // Every stored time is a whole number of ms (Postgres keeps them in bigint columns): times
  // read from the clock are rounded down, lengths of time and what they lead to rounded up.
  const leaseMs = Math.ceil(options.leaseMs ?? 30_000);
  if (!(leaseMs >= 30)) throw new InvalidOptionError(`createEngine: leaseMs must be at least 30 ms, got ${String(options.leaseMs)}.`);
  const retention = checkRetention(options.retention);
  const maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
  if (!(maxValueBytes > 0)) throw new InvalidOptionError(`createEngine: maxValueBytes must be > 0, got ${String(options.maxValueBytes)}.`);
  // Checked (and the API loaded) before a default store is made.
  const tracing = loadTracing(options.tracing);
  const store = options.store ?? sqliteStore();
  // The engine uses the store through its runtime wrapper: defaults, one closed guard (store/runtime.ts).
  const runtime = runtimeStore(store);
  // A store whose server frees a cut-off process's locks on a timer keeps it within the lease (or refuses it).
  runtime.useLease(leaseMs);
  const settings: EngineSettings = {
    store: runtime,
    clock: wholeMs(options.clock ?? systemClock),
    leaseMs,
    maxValueBytes,
    payloads: new Payloads(maxValueBytes, options.codec, runtime.location),
    onProgress: options.onProgress,
    hooks: options[TEST_HOOKS],
  };
  if (tracing) settings.tracing = tracing;
  return { store, runtime, settings, retention };
}
