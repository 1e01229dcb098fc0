// A store file as steplog's SQLite schema version 3 wrote it (steps clustered on the run id),
// for the tests of the upgrade to version 4. Migrations never change once released, so the
// first three are exactly what that version ran.
import fs from "node:fs";
import { Database } from "./sqlite-driver.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";

/** Create `file` at schema version 3; `fill` writes rows into it (with version 3's columns). */
export function createVersion3Store(file: string, fill: (db: Database) => void = () => {}): void {
  fs.closeSync(fs.openSync(file, "wx", 0o600));
  const db = new Database(file);
  try {
    db.pragma("journal_mode = WAL");
    for (const sql of MIGRATIONS.slice(0, 3)) db.exec(sql);
    db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', '3')").run();
    db.transaction(() => fill(db))();
  } finally {
    db.close();
  }
}
