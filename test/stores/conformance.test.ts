// Every store runs the one conformance suite (exported from steplog/testing).
import crypto from "node:crypto";
import fs from "node:fs";
import { describe, it } from "vitest";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore, type SqliteStore } from "../../src/entries/sqlite.js";
import { describeStore } from "../../src/entries/testing.js";
import { LOADABLE_DRIVERS } from "../helpers/sqlite-driver.js";
import { tmpDb } from "../helpers/tmp.js";

describeStore("memory", { create: () => memoryStore() }, { describe, it });

// On every SQLite driver this runtime loads (better-sqlite3 on Node.js 20; node:sqlite too on 22.16+).
for (const driver of LOADABLE_DRIVERS) {
  describeStore(
    `sqlite (${driver})`,
    {
      create: () => sqliteStore({ path: tmpDb(), driver }),
      reopen: (closed) => sqliteStore({ path: (closed as SqliteStore).path, driver }),
      another: (store) => sqliteStore({ path: (store as SqliteStore).path, driver }),
      corrupt: (closed) => {
        const file = (closed as SqliteStore).path;
        fs.writeFileSync(file, crypto.randomBytes(8192));
        for (const suffix of ["-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
        return sqliteStore({ path: file, driver });
      },
    },
    { describe, it },
  );
}
