/**
 * Reading the journal file into memory, incrementally: the state is kept between calls and
 * only the bytes appended since the last read are parsed. Only complete lines are consumed;
 * whatever follows the last complete one is the "tail" — a write still in progress (another
 * process holds the lock) or a torn one (its writer died mid-append). The caller, which
 * knows whether it holds the lock, decides which.
 */

import fs from "node:fs";
import { StoreTooNewError, StoreUnreadableError } from "../../base/errors.js";
import { apply, checkRecord, FORMAT_VERSION, HEADER_LINE, parseHeader, type JournalState } from "./records.js";

/** Bytes after the last consumed line that are not (yet) a record. */
export interface Tail {
  /** Where it starts: the size to truncate the file to. */
  offset: number;
  length: number;
  /** Its line number. */
  line: number;
  reason: string;
  preview: string;
}

const NEWLINE = 0x0a;

export class Journal {
  state: JournalState = new Map();
  /** Bytes consumed: the end of the last complete, parsed line. */
  offset = 0;
  /** Lines consumed, the header included. */
  lines = 0;
  #ino: number | undefined;

  constructor(
    private readonly location: string,
    /** A record refused on replay: written by a process that had lost the lock; it is skipped. */
    private readonly onSkipped: (line: number, why: Error) => void,
  ) {}

  reset(): void {
    this.state = new Map();
    this.offset = 0;
    this.lines = 0;
    this.#ino = undefined;
  }

  /** True once a header has been read (the file holds a store, even an empty one). */
  get hasHeader(): boolean {
    return this.lines > 0;
  }

  /**
   * Consume every complete line appended since the last call. Throws STORE_UNREADABLE (with
   * the line number) for a bad line that is not the last, STORE_TOO_NEW for a newer format;
   * either way the state is reset and the file untouched. Returns the tail, if any, and the
   * size read up to.
   */
  catchUp(fd: number): { tail: Tail | undefined; size: number } {
    const stat = fs.fstatSync(fd);
    // Replaced or cut short behind our back (we only ever cut off a tail we never consumed): read it all again.
    if ((this.#ino !== undefined && stat.ino !== this.#ino) || stat.size < this.offset) this.reset();
    this.#ino = stat.ino;
    const size = stat.size;
    if (size === this.offset) return { tail: undefined, size };
    const buf = Buffer.allocUnsafe(size - this.offset);
    let read = 0;
    while (read < buf.length) {
      const n = fs.readSync(fd, buf, read, buf.length - read, this.offset + read);
      if (n === 0) break; // the file shrank while we read; the rest is read next time
      read += n;
    }
    const readFrom = this.offset;
    try {
      return { tail: this.#consume(buf.subarray(0, read)), size: readFrom + read };
    } catch (error) {
      this.reset();
      throw error;
    }
  }

  #consume(buf: Buffer): Tail | undefined {
    const base = this.offset;
    let start = 0;
    while (start < buf.length) {
      const end = buf.indexOf(NEWLINE, start);
      const lineNo = this.lines + 1;
      if (end === -1) return this.#tail(buf, base, start, buf.length, lineNo, "it has no newline");
      const text = buf.toString("utf8", start, end);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        // A last line that does not parse is a torn write (say, zeros after a power loss); any other is damage.
        if (end === buf.length - 1 && lineNo > 1) return this.#tail(buf, base, start, end + 1, lineNo, "it is not JSON");
        throw this.#unreadable(lineNo, lineNo === 1 ? "is not a steplog journal header" : "is not JSON");
      }
      if (lineNo === 1) {
        const header = parseHeader(value);
        if (!header) throw this.#unreadable(1, "is not a steplog journal header");
        if (header.version > FORMAT_VERSION) throw new StoreTooNewError(this.location, header.version, FORMAT_VERSION);
      } else {
        const record = checkRecord(value);
        if (typeof record === "string") throw this.#unreadable(lineNo, record);
        const refused = apply(this.state, record);
        if (refused) this.onSkipped(lineNo, refused);
      }
      this.lines = lineNo;
      start = end + 1;
      this.offset = base + start;
    }
    return undefined;
  }

  #tail(buf: Buffer, base: number, start: number, end: number, line: number, reason: string): Tail {
    const bytes = buf.subarray(start, end);
    // A torn first line is only a header cut short; anything else there is a foreign file.
    if (
      line === 1 &&
      !Buffer.from(HEADER_LINE + "\n")
        .subarray(0, bytes.length)
        .equals(bytes)
    ) {
      throw this.#unreadable(1, "is not a steplog journal header");
    }
    const preview = bytes.toString("utf8", 0, Math.min(bytes.length, 80)).replace(/[^\x20-\x7e]/g, "?");
    return { offset: base + start, length: end - start, line, reason, preview };
  }

  #unreadable(line: number, why: string): StoreUnreadableError {
    return new StoreUnreadableError(this.location, `line ${line} ${why}`);
  }
}
