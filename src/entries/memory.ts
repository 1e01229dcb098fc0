/** steplog/memory: a store that lives in this process only, for tests. */
export { memoryStore } from "../store/memory.js";
export type { MemoryStoreOptions } from "../public/types.js";
