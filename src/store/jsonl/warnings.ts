/**
 * The JSONL store's warnings: what it ignores or gives up on (a torn last line, a record
 * written without the lock, a lock it could not remove or that was compromised). Each is told
 * once per store instance — every read would otherwise tell of the same torn line again — and
 * a warning handler that throws never breaks the write or read that warned.
 */

import type { Tail } from "./journal.js";

export class Warnings {
  readonly #location: string;
  readonly #warn: (message: string) => void;
  readonly #warned = new Set<string>();

  constructor(location: string, warn: (message: string) => void) {
    this.#location = location;
    this.#warn = warn;
  }

  torn(tail: Tail): void {
    this.once(
      `torn:${tail.offset}`,
      `${this.#location}: ignoring a torn last line ${tail.line} (${tail.length} bytes; ${tail.reason}), left by a write a crash cut off; ` +
        `the next write cuts it off. It began: ${tail.preview}`,
    );
  }

  once(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    try {
      this.#warn(message);
    } catch {
      // A warning must never break a write.
    }
  }
}
