// Two store objects on the same storage, spelled differently (a symlinked folder; localhost and
// 127.0.0.1), in one process: an attempt running through one is live for the other too, so a
// continue through the other is refused (RUN_BUSY) and never runs the step a second time.
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createEngine, defineWorkflow, isSteplogError } from "../../src/entries/index.js";
import { jsonlStore } from "../../src/entries/jsonl.js";
import { postgresStore } from "../../src/entries/postgres.js";
import { sqliteStore } from "../../src/entries/sqlite.js";
import type { Store } from "../../src/store/types.js";
import { PG_URL } from "../helpers/pg.js";
import { tmpDir } from "../helpers/tmp.js";

/** Two spellings of one storage, as two store objects. */
type Pair = () => { a: Store; b: Store; drop?: () => Promise<void> };

function viaSymlink(open: (file: string) => Store, name: string): Pair {
  return () => {
    const real = tmpDir();
    const link = path.join(tmpDir(), "link");
    fs.symlinkSync(real, link);
    return { a: open(path.join(real, name)), b: open(path.join(link, name)) };
  };
}

const PAIRS: Array<[string, Pair]> = [
  ["sqlite, through a symlinked folder", viaSymlink((file) => sqliteStore({ path: file }), "steplog.db")],
  ["jsonl, through a symlinked folder", viaSymlink((file) => jsonlStore({ path: file }), "steplog.jsonl")],
];
const pgUrl = PG_URL;
if (pgUrl) {
  // Over TCP and over the server's Unix socket when there is one (the server sees no address
  // then), else as localhost and 127.0.0.1.
  const url = new URL(pgUrl);
  const port = url.port || "5432";
  const socketDir = ["/var/run/postgresql", "/tmp"].find((dir) => fs.existsSync(path.join(dir, `.s.PGSQL.${port}`)));
  const otherSpelling = () => {
    if (socketDir) return new URL(`${url.protocol}//${url.username}@localhost:${port}/${url.pathname.slice(1)}?host=${encodeURIComponent(socketDir)}`);
    const other = new URL(pgUrl);
    other.hostname = url.hostname === "localhost" ? "127.0.0.1" : "localhost";
    return other;
  };
  PAIRS.push([
    `postgres, over TCP and ${socketDir ? "over its Unix socket" : "as localhost"}`,
    () => {
      const schema = `steplog_spellr_${process.pid}_${Date.now() % 100000}`;
      return {
        a: postgresStore({ connectionString: url.toString(), schema }),
        b: postgresStore({ connectionString: otherSpelling().toString(), schema }),
        async drop() {
          const admin = new pg.Pool({ connectionString: pgUrl, max: 1 });
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
        },
      };
    },
  ]);
  PAIRS.push([
    "postgres, as 127.0.0.1 and as localhost",
    () => {
      const schema = `steplog_spell_${process.pid}_${Date.now() % 100000}`;
      const url = new URL(pgUrl);
      const other = new URL(pgUrl);
      other.hostname = url.hostname === "localhost" ? "127.0.0.1" : "localhost";
      return {
        a: postgresStore({ connectionString: url.toString(), schema }),
        b: postgresStore({ connectionString: other.toString(), schema }),
        async drop() {
          const admin = new pg.Pool({ connectionString: pgUrl, max: 1 });
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => admin.end());
        },
      };
    },
  ]);
} else {
  console.log("one-store-two-spellings: Postgres skipped (set STEPLOG_PG_URL=postgres://… to run it)");
}

describe.each(PAIRS)("one store, two spellings (%s)", (_name, pair) => {
  it("an attempt live through one store object is live for the other: a continue through it is RUN_BUSY, the step runs once", async () => {
    const { a, b, drop } = pair();
    expect(a.location).not.toBe(b.location);
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let enteredAgain!: (what: string) => void;
    const ranTwice = new Promise<string>((resolve) => (enteredAgain = resolve));
    const slow = defineWorkflow({
      name: "slow",
      async run(ctx) {
        return ctx.step("effect", async () => {
          calls++;
          if (calls === 1) entered();
          else enteredAgain("the step ran a second time while the first call was still running");
          await gate;
          return "done";
        });
      },
    });
    const first = createEngine({ store: a, workflows: [slow] });
    const second = createEngine({ store: b, workflows: [slow] });
    try {
      const running = first.start(slow, undefined, { id: "spelled-twice" });
      await inside;
      const refused = await Promise.race([second.continue("spelled-twice").catch((error: unknown) => error), ranTwice]);
      expect(isSteplogError(refused, "RUN_BUSY"), String(refused)).toBe(true);
      expect((await second.get("spelled-twice")).status).toBe("running");
      release();
      expect(await running).toMatchObject({ status: "completed", value: "done" });
      expect(calls).toBe(1);
    } finally {
      release();
      await first.close();
      await second.close();
      await drop?.();
    }
  });
});

describe("storageId of a file store", () => {
  it("is the same through a symlink, before the file or its folder exist and after", async () => {
    const real = tmpDir();
    const link = path.join(tmpDir(), "link");
    fs.symlinkSync(real, link);
    const viaLink = sqliteStore({ path: path.join(link, "not", "yet", "steplog.db") });
    const viaReal = sqliteStore({ path: path.join(real, "not", "yet", "steplog.db") });
    const before = await viaLink.storageId();
    expect(before).toBe(await viaReal.storageId());
    expect(before).toBe(`sqlite:${path.join(fs.realpathSync(real), "not", "yet", "steplog.db")}`);
    const noop = defineWorkflow({ name: "noop", run: async () => "ok" });
    const engine = createEngine({ store: viaLink, workflows: [noop] });
    expect(await engine.start(noop, undefined)).toMatchObject({ status: "completed" });
    expect(fs.existsSync(path.join(real, "not", "yet", "steplog.db"))).toBe(true);
    expect(await sqliteStore({ path: path.join(link, "not", "yet", "steplog.db") }).storageId()).toBe(before);
    await engine.close();
    await viaReal.close();
  });
});
