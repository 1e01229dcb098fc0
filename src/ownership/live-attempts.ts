/**
 * The attempts running in this process, shared by every engine and every copy of this
 * module (ESM and CJS builds, several entries) through a global symbol. A lease held by
 * this very process but by no attempt in this registry belongs to an attempt that is gone.
 *
 * Each registration is a token of its own, so ending one (say, a start refused with
 * RUN_EXISTS) can never unregister another attempt of the same run.
 */

const KEY = Symbol.for("steplog.liveAttempts.v2");

type Registry = Map<string, Set<LiveToken>>;

export interface LiveToken {
  readonly key: string;
}

function registry(): Registry {
  const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
  return (holder[KEY] ??= new Map());
}

const keyOf = (storeLocation: string, runId: string) => `${storeLocation}\u0000${runId}`;

export function markLive(storeLocation: string, runId: string): LiveToken {
  const token: LiveToken = { key: keyOf(storeLocation, runId) };
  const tokens = registry().get(token.key);
  if (tokens) tokens.add(token);
  else registry().set(token.key, new Set([token]));
  return token;
}

export function markDone(token: LiveToken): void {
  const tokens = registry().get(token.key);
  if (!tokens) return;
  tokens.delete(token);
  if (tokens.size === 0) registry().delete(token.key);
}

export function isLiveHere(storeLocation: string, runId: string): boolean {
  return registry().has(keyOf(storeLocation, runId));
}
