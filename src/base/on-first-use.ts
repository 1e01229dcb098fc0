/**
 * Modules that only some features need, loaded the first time such a feature is used instead of
 * when steplog is imported, so `import "steplog"` costs an app only what it uses: croner (a
 * schedule), proper-lockfile (a JSONL store), node:crypto (encryptedCodec), node:worker_threads
 * (the first attempt owned) and node:util (a start that finds its run). Loaded with require,
 * from steplog's own location as an import of steplog would resolve them, because their callers
 * are synchronous: defineWorkflow checks a cron pattern as it is called, and a JSONL store's
 * commit takes its lock in one synchronous stretch. (pg, needed only after an await, is a
 * dynamic import instead: store/postgres/connection.ts.)
 */

import { createRequire } from "node:module";

const requireHere = createRequire(import.meta.url);

/** A loader of package `name`: loads it on its first call (again after a failed one) and returns it from then on. */
export function onFirstUse<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= requireHere(name) as T);
}
