/**
 * Exclusion between processes: proper-lockfile's lock directory (`<file>.lock`, made with an
 * atomic mkdir) around every commit. The lock is taken with the synchronous API and the whole
 * commit (catch up, decide, append, fsync, release) runs in one synchronous stretch, so a
 * commit never spans a turn of the event loop: nothing else in this process can interleave
 * and the lock is held for as short as the disk allows. Only waiting for another process's
 * lock is asynchronous (a short, growing, jittered sleep between tries).
 *
 * A lock whose directory's mtime is older than `staleMs` belongs to a dead process and is
 * taken over (proper-lockfile refreshes the mtime of a live holder every staleMs / 2, and
 * sets it up to one second ahead when it takes the lock, so a takeover comes after staleMs
 * and at most a second more).
 *
 * proper-lockfile is loaded when a JSONL store opens (the first FileLock), not when steplog is
 * imported: it brings graceful-fs, which patches the fs module, into every app otherwise.
 */

import type lockfile from "proper-lockfile";
import { StoreDriverFailedError } from "../../base/errors.js";
import { onFirstUse } from "../../base/on-first-use.js";

type Lockfile = typeof lockfile;

const properLockfile = onFirstUse<Lockfile>("proper-lockfile");

/** proper-lockfile raises any smaller `stale` to this. */
export const MIN_LOCK_STALE_MS = 2000;

export class LockBusyError extends Error {
  constructor(file: string, waitedMs: number) {
    super(`the lock ${file}.lock stayed held by another process for ${waitedMs} ms`);
  }
}

export class FileLock {
  readonly #lockfile: Lockfile;

  constructor(
    /** The store's description, for an error when proper-lockfile cannot be loaded. */
    location: string,
    private readonly file: string,
    private readonly staleMs: number,
    /** Called if proper-lockfile finds our lock taken over or gone (it would otherwise throw in a timer). */
    private readonly onCompromised: (error: Error) => void,
    /** Called if letting go fails (the commit itself stands; others take the lock once it is stale). */
    private readonly onReleaseFailed: (error: unknown) => void,
  ) {
    this.#lockfile = loadLockfile(location);
  }

  /** Run `body` under the lock, waiting up to `waitMs` for another process to let go. */
  async run<T>(body: () => T, waitMs: number): Promise<T> {
    const start = Date.now();
    let pause = 1;
    for (;;) {
      const release = this.#tryTake();
      if (release) {
        let result: T;
        try {
          result = body();
        } finally {
          this.#release(release);
        }
        return result;
      }
      if (Date.now() - start >= waitMs) throw new LockBusyError(this.file, Date.now() - start);
      await new Promise((resolve) => setTimeout(resolve, pause + Math.random() * pause));
      pause = Math.min(pause * 2, 25);
    }
  }

  /** True when another process holds a live (not stale) lock. */
  heldElsewhere(): boolean {
    try {
      return this.#lockfile.checkSync(this.file, { stale: this.staleMs });
    } catch {
      return false;
    }
  }

  #tryTake(): (() => void) | undefined {
    try {
      return this.#lockfile.lockSync(this.file, { stale: this.staleMs, onCompromised: this.onCompromised });
    } catch (error) {
      if ((error as { code?: string }).code === "ELOCKED") return undefined;
      throw error;
    }
  }

  #release(release: () => void): void {
    try {
      release();
    } catch (error) {
      // ERELEASED: proper-lockfile marked it compromised meanwhile; onCompromised was told.
      if ((error as { code?: string }).code !== "ERELEASED") this.onReleaseFailed(error);
    }
  }
}

function loadLockfile(location: string): Lockfile {
  try {
    return properLockfile();
  } catch (error) {
    throw new StoreDriverFailedError(
      location,
      [{ driver: "the proper-lockfile package", reason: (error instanceof Error ? error.message : String(error)).split("\n")[0]! }],
      "It is one of steplog's dependencies and takes the JSONL store's file lock: reinstall (npm install), or, if you bundle your app, leave proper-lockfile out of the bundle (mark it external) and install it beside it; then open the store again.",
      error,
    );
  }
}
