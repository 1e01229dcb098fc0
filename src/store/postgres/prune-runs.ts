/**
 * The Postgres store's pruneRuns (engine.prune) and takeTurn (retention's one pruner), each one
 * transaction of its own. A prune locks each run as every transaction on a run does (its lease
 * row, see store.ts), the groups' first runs in id order, reads the runs under the lock,
 * asks the judge and deletes the approved runs' rows. Not run again after a COMMIT with no
 * reply (the failure says the runs may have been deleted). Postgres keeps a deleted row's bytes
 * until VACUUM reuses its space: docs/stores.md says how to reclaim it.
 */

import { fault } from "../../base/faults.js";
import { chooseGroupsAsync, nonePruned } from "../prune-groups.js";
import type { PruneJudge, PrunedRows } from "../types.js";
import type { Database } from "./database.js";

export async function pruneRuns(db: Database, runIds: string[], approve: PruneJudge): Promise<PrunedRows> {
  const s = db.sql.s;
  const result = await db.transact<PrunedRows>(false, "the pruned runs", runIds[0] ?? "", "fail", true, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    // Each run locked (its lease row, as every transaction on a run) before it is read: the
    // groups' first runs in id order first, so two prunes never wait for each other in a circle.
    const locked = new Set<string>();
    for (const id of [...runIds].sort()) if (await db.lock(client, id)) locked.add(id);
    const load = async (id: string) => (locked.has(id) || (await db.lock(client, id)) ? db.sql.loadRun(client, id) : undefined);
    const children = async (id: string) =>
      (await client.query(`SELECT id FROM ${s}.runs WHERE parent = $1 ORDER BY id`, [id])).rows.map((r) => (r as { id: string }).id);
    const rows = await chooseGroupsAsync(runIds, { load, children }, approve);
    // A statement a table for the whole batch, not one a run: round trips are most of a batch's
    // time, and the rows stay locked until COMMIT (bench case 13 on Postgres).
    if (rows.ids.length > 0) {
      const ids = [rows.ids];
      await client.query(`DELETE FROM ${s}.steps WHERE run_id = ANY($1::text[])`, ids);
      await client.query(`DELETE FROM ${s}.events WHERE run_id = ANY($1::text[])`, ids);
      await client.query(`DELETE FROM ${s}.stream_records WHERE run_id = ANY($1::text[])`, ids);
      for (const id of rows.ids) fault("during-prune", id);
      await client.query(`DELETE FROM ${s}.attempts WHERE run_id = ANY($1::text[])`, ids);
      await client.query(`DELETE FROM ${s}.leases WHERE run_id = ANY($1::text[])`, ids);
      await client.query(`DELETE FROM ${s}.runs WHERE id = ANY($1::text[])`, ids);
    }
    await conn.commit(client, tx);
    return rows;
  });
  return result ?? nonePruned();
}

/** The turn's holder and end, in `meta` under `turn:<name>`, its row locked while it is decided. */
export async function takeTurn(db: Database, name: string, holder: string, now: number, until: number): Promise<boolean> {
  const s = db.sql.s;
  const key = `turn:${name}`;
  const result = await db.transact<{ taken: boolean }>(false, "the retention turn", "", "fail", false, async (client, tx) => {
    const { conn } = await db.connect();
    await conn.begin(client);
    await client.query(`INSERT INTO ${s}.meta (key, value) VALUES ($1, '{"holder":"","until":0}') ON CONFLICT (key) DO NOTHING`, [key]);
    const { rows } = await client.query(`SELECT value FROM ${s}.meta WHERE key = $1 FOR UPDATE`, [key]);
    const held = JSON.parse((rows[0] as { value: string }).value) as { holder: string; until: number };
    if (held.holder !== holder && held.holder !== "" && held.until > now) {
      await conn.rollback(client);
      return { taken: false };
    }
    await client.query(`UPDATE ${s}.meta SET value = $2 WHERE key = $1`, [key, JSON.stringify({ holder, until })]);
    await conn.commit(client, tx);
    return { taken: true };
  });
  return result?.taken ?? false;
}
