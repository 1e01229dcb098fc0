/** steplog/jsonl: a store on one append-only JSONL file — a plain, greppable journal. */
export { jsonlStore } from "../store/jsonl/store.js";
export type { JsonlStoreOptions, JsonlStore } from "../public/types.js";
