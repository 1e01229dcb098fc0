/**
 * How the SQLite store writes a batch (group-commit.ts queues the writes, batches them and
 * settles them): one BEGIN IMMEDIATE transaction on whichever driver opened the connection
 * (better-sqlite3, node:sqlite, bun:sqlite: see drivers/), so the batch shares one fsync.
 *
 * A write that is refused on its own (a stale fence) is refused alone: each write checks
 * before it changes anything, so the others in the batch still commit. `beginBatch` runs first
 * inside each transaction (the store learns whether the fences it has checked still stand), and
 * `batchFailed` after a transaction that failed. A failure of the transaction itself (disk
 * full, I/O error) fails every write in it: none was committed.
 */

import type { SqliteConnection } from "./drivers/connection.js";
import { SteplogError } from "../../base/errors.js";
import type { BatchWriter, QueuedWrite } from "../group-commit.js";

/**
 * The store's own writes, applied by its `applyOp` from data (a step's intent and outcome: no
 * closure a write). Any other write is queued as a function (OP_CALL): `a` is the function to
 * apply and `b` what it records (a string, or a function building one).
 */
export const OP_CALL = 0;
/** The store's own ops (store.ts): a step's intent and its outcome. */
export const OP_INTENT = 1;
export const OP_OUTCOME = 2;

/** Applies a queued write of one of the store's own kinds: `op` (> 0) and its two arguments. */
export type OpApplier = (op: number, a: unknown, b: unknown) => unknown;
/** Names what a write of one of the store's own kinds records, for an error message. */
export type OpDescriber = (op: number, a: unknown, b: unknown) => string;

/** What the store adds to the writer: its own kinds of write, and what runs first in each batch and after one that failed. */
export interface BatchHooks {
  applyOp?: OpApplier;
  describeOp?: OpDescriber;
  /** First thing inside each batch's transaction. */
  beginBatch?: () => void;
  /** After a batch's transaction failed (nothing of it was committed). */
  batchFailed?: () => void;
}

const noOps: OpApplier = (op) => {
  throw new Error(`steplog internal: the write queue has no applier for write ${op}`);
};

type Write = QueuedWrite<unknown, unknown>;

export class SqliteBatchWriter implements BatchWriter<unknown, unknown> {
  readonly sync = true;
  readonly #toError: (error: unknown, what: string, runId: string) => Error;
  /** Built once: the driver wraps the function in BEGIN IMMEDIATE … COMMIT. */
  readonly #commit: (batch: Write[]) => void;
  readonly #describeOp: OpDescriber;
  readonly #batchFailed: () => void;

  constructor(db: SqliteConnection, toError: (error: unknown, what: string, runId: string) => Error, hooks: BatchHooks = {}) {
    this.#toError = toError;
    const applyOp = hooks.applyOp ?? noOps;
    const beginBatch = hooks.beginBatch ?? (() => {});
    this.#describeOp = hooks.describeOp ?? ((op) => `write ${op}`);
    this.#batchFailed = hooks.batchFailed ?? (() => {});
    this.#commit = db.transaction((batch: Write[]) => {
      beginBatch();
      for (const write of batch) {
        try {
          write.result = write.op === OP_CALL ? (write.a as () => unknown)() : applyOp(write.op, write.a, write.b);
        } catch (error) {
          // A refusal is one write's; anything else, or a refusal after SQLite rolled the whole
          // transaction back, fails the batch (the writes after it must not run outside it).
          if (!(error instanceof SteplogError) || !db.inTransaction) throw error;
          write.refused = error;
        }
      }
    }).immediate;
  }

  write(batch: Write[]): void {
    try {
      this.#commit(batch);
    } catch (error) {
      this.#batchFailed();
      throw error;
    }
  }

  failed(error: unknown, write: Write): Error {
    return this.#toError(error, this.#what(write), write.runId);
  }

  #what(write: Write): string {
    if (write.op !== OP_CALL) return this.#describeOp(write.op, write.a, write.b);
    return typeof write.b === "string" ? write.b : (write.b as () => string)();
  }
}
