/**
 * The Postgres store's importRuns (engine.import): one transaction of its own, every run's place
 * checked under its dedupe key's lock (claims.ts's rule for a new run), then each run's rows
 * inserted as given, its lease row and stream records too. Not run again after a COMMIT with no reply: an import
 * cannot tell its own rows from another's (the failure says they may have been recorded).
 */

import { RUN_INSERT_COLUMNS, runInsertValues } from "../run-values.js";
import type { ImportedRun, RunRow } from "../types.js";
import type { Database } from "./database.js";
import { insertStreamRecords } from "./stream-records.js";

type Imported = { imported: true } | { exists: RunRow };

export async function importRuns(db: Database, runs: ImportedRun[]): Promise<Imported> {
  const s = db.sql.s;
  const placeholders = RUN_INSERT_COLUMNS.split(",")
    .map((_, i) => `$${i + 1}`)
    .join(", ");
  return (await db.transact<Imported>(true, "the imported runs", runs[0]?.run.id ?? "", "fail", true, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    const refuse = async (exists: RunRow): Promise<Imported> => {
      await conn.rollback(client);
      return { exists };
    };
    for (const { run } of runs) {
      if (run.dedupeKey != null) await db.sql.lockKey(client, "dedupe", run.dedupeKey);
      const taken = await db.sql.taken(client, run);
      if (taken) return refuse(taken);
    }
    for (const { run, attempts, steps, events, streams, lease } of runs) {
      // Two runs of the document with one id or one dedupe key: the second finds the first.
      const taken = await db.sql.taken(client, run);
      if (taken) return refuse(taken);
      await client.query(`INSERT INTO ${s}.runs (${RUN_INSERT_COLUMNS}) VALUES (${placeholders})`, runInsertValues(run));
      for (const attempt of attempts) await db.sql.insertAttempt(client, attempt, lease.epoch, null);
      await client.query(`INSERT INTO ${s}.leases (run_id, epoch, attempt, expires_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5)`, [
        run.id,
        lease.epoch,
        lease.attempt,
        lease.expiresAt,
        lease.heartbeatAt,
      ]);
      for (const step of steps) await db.sql.insertStep(client, step, null);
      for (const e of events) {
        await client.query(`INSERT INTO ${s}.events (run_id, seq, name, payload, sent_at, consumed_by, key) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
          e.runId,
          e.seq,
          e.name,
          e.payload,
          e.sentAt,
          e.consumedBy,
          e.key ?? null,
        ]);
      }
      await insertStreamRecords(client, s, streams ?? []);
    }
    await conn.commit(client, tx);
    return { imported: true };
  }))!;
}
