/**
 * The attempts running in this process, shared by every engine and every copy of this
 * module (ESM and CJS builds, several entries) through a global symbol. A lease held by
 * this very process but by no attempt in this registry belongs to an attempt that is gone.
 */

const KEY = Symbol.for("steplog.liveAttempts");

type Registry = Map<string, number>;

function registry(): Registry {
  const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
  return (holder[KEY] ??= new Map());
}

const id = (storeLocation: string, runId: string) => `${storeLocation}\u0000${runId}`;

export function markLive(storeLocation: string, runId: string, epoch: number): void {
  registry().set(id(storeLocation, runId), epoch);
}

export function markDone(storeLocation: string, runId: string, epoch: number): void {
  const key = id(storeLocation, runId);
  if (registry().get(key) === epoch) registry().delete(key);
}

export function isLiveHere(storeLocation: string, runId: string): boolean {
  return registry().has(id(storeLocation, runId));
}
