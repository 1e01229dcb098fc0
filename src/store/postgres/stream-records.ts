/**
 * The Postgres store's stream records written: one statement (one round trip) for any number of
 * records, a column an array, so a burst of chunks or an imported stream is one insert.
 */

import type { StreamRecord } from "../types.js";
import type { PgClient } from "./connection.js";

export async function insertStreamRecords(client: PgClient, s: string, records: readonly StreamRecord[]): Promise<void> {
  if (records.length === 0) return;
  await client.query(
    `INSERT INTO ${s}.stream_records (run_id, stream, seq, kind, chunk_offset, chunk, step, attempt, at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::integer[], $6::text[], $7::text[], $8::integer[], $9::bigint[])`,
    [
      records.map((r) => r.runId),
      records.map((r) => r.stream),
      records.map((r) => r.seq),
      records.map((r) => r.kind),
      records.map((r) => r.offset),
      records.map((r) => r.chunk),
      records.map((r) => r.step),
      records.map((r) => r.attempt),
      records.map((r) => r.at),
    ],
  );
}
