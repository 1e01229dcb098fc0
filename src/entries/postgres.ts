/** steplog/postgres: the store for many workers on many machines. Needs the `pg` package (npm install pg). */
export { postgresStore, DEFAULT_PG_SCHEMA } from "../store/postgres/store.js";
export type { PostgresStoreOptions, PostgresStore } from "../public/types.js";
export type { PgPoolLike, PgClient, PgResult } from "../public/types.js";
