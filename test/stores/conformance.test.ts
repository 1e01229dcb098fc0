// Every store runs the one conformance suite (exported from steplog/testing).
import crypto from "node:crypto";
import fs from "node:fs";
import { describe, it } from "vitest";
import { memoryStore } from "../../src/entries/memory.js";
import { sqliteStore, type SqliteStore } from "../../src/entries/sqlite.js";
import { describeStore } from "../../src/entries/testing.js";
import { tmpDb } from "../helpers/tmp.js";

describeStore("memory", { create: () => memoryStore() }, { describe, it });

describeStore(
  "sqlite",
  {
    create: () => sqliteStore({ path: tmpDb() }),
    reopen: (closed) => sqliteStore({ path: (closed as SqliteStore).path }),
    another: (store) => sqliteStore({ path: (store as SqliteStore).path }),
    corrupt: (closed) => {
      const file = (closed as SqliteStore).path;
      fs.writeFileSync(file, crypto.randomBytes(8192));
      for (const suffix of ["-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
      return sqliteStore({ path: file });
    },
  },
  { describe, it },
);
