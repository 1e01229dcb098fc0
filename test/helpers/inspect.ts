import { Database } from "./sqlite-driver.js";

/** What a store file holds, read with a plain connection as a person with the sqlite3 shell would. */
export function inspectDb(file: string) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return {
      integrity: db.pragma("integrity_check", { simple: true }) as string,
      steps: db.prepare("select run_id as runId, seq, attempt, key, status, idempotency_key as idempotencyKey from steps order by run_id, seq").all() as Array<{
        runId: string;
        seq: number;
        attempt: number;
        key: string;
        status: string;
        idempotencyKey: string;
      }>,
      runs: db.prepare("select id, status, attempts, budget_used as budgetUsed from runs").all() as Array<{
        id: string;
        status: string;
        attempts: number;
        budgetUsed: number;
      }>,
      attempts: db.prepare("select run_id as runId, number, ending, pid, forced from attempts order by run_id, number").all() as Array<{
        runId: string;
        number: number;
        ending: string | null;
        pid: number;
        forced: number;
      }>,
      leases: db.prepare("select run_id as runId, epoch, attempt from leases").all() as Array<{ runId: string; epoch: number; attempt: number | null }>,
    };
  } finally {
    db.close();
  }
}
