/**
 * The conformance suite's types: the options describeStore takes, the test functions it needs
 * from a runner, what `additionalTests` is given, and what each group of cases is given. Apart
 * so the case files can name them without importing store-conformance.ts (which imports them).
 */

import type { Store } from "../store/types.js";
import type { attemptRow, runRow, stepRow } from "./conformance-rows.js";

export interface StoreConformanceOptions {
  /** A fresh, empty store. */
  create: () => Store | Promise<Store>;
  /** Another instance on the same data, after `closed` was closed: for the durability tests. */
  reopen?: (closed: Store) => Store | Promise<Store>;
  /** A second handle on the same live data (another connection or process-like handle). Default: the same instance. */
  another?: (store: Store) => Store | Promise<Store>;
  /** Damage the store's data so it cannot be read; returns a new instance on it. */
  corrupt?: (closed: Store) => Store | Promise<Store>;
  /**
   * Tests of this suite your store cannot pass yet, by their exact name, each with the reason:
   * they are reported as skipped (with the reason), never as passed. A name that matches no test
   * is an error, so a renamed test cannot quietly stop being skipped. Needs `it.skip`.
   */
  skip?: Record<string, string>;
  /** Tests of your store's own, run inside the suite's describe block (see AdditionalTests). */
  additionalTests?: (tests: AdditionalTests) => void;
}

/** What `additionalTests` is given: the runner's `it`, a fresh store per test, and the suite's row builders. */
export interface AdditionalTests {
  it: TestFunctions["it"];
  /** Wraps a test body: it gets a fresh store from `create`, closed afterwards. */
  withStore: (body: (store: Store) => Promise<void>) => () => Promise<void>;
  runRow: typeof runRow;
  attemptRow: typeof attemptRow;
  stepRow: typeof stepRow;
  /** The time every row of the suite is written at. */
  now: number;
}

export type TestBody = () => Promise<void> | void;

export interface TestFunctions {
  describe: (name: string, body: () => void) => unknown;
  it: ((name: string, body: TestBody, timeout?: number) => unknown) & { skip?: (name: string, body: TestBody) => unknown };
}

/** What each group of cases is given: `it` (honouring `skip`), a fresh store per test, the suite's options. */
export interface SuiteCases {
  it: (title: string, body: TestBody, timeout?: number) => unknown;
  withStore: (body: (store: Store) => Promise<void>) => () => Promise<void>;
  options: StoreConformanceOptions;
}
