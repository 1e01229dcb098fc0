/** steplog/sqlite: the embedded default store. */
export { sqliteStore, DEFAULT_SQLITE_PATH } from "../store/sqlite/store.js";
export type { SqliteStoreOptions, SqliteStore } from "../public/types.js";
export type { SqliteDriverChoice, SqliteDriverName } from "../public/types.js";
