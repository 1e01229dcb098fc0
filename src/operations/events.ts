/**
 * Sending to a parked run: events (approvals and rejections are in approvals.ts). Each is recorded in the run's
 * events (in order of arrival) in one transaction with waking the run, so a worker sees it.
 */

import { NotWaitingError, RunNotFoundError } from "../base/errors.js";
import { checkName } from "../workflow/names.js";
import type { EventRow, Store, StoredRun } from "../store/types.js";
import type { Payloads } from "../payloads/payloads.js";
import { describeWait } from "../steps/waits.js";
import type { StoredWait } from "../workflow/step-resolution.js";

export interface SendOptions {
  /** Keep the event for a later wait even though the run does not wait for it now. */
  keep?: boolean;
  /**
   * Send it once: a later send to this run with the same key is accepted and changes nothing
   * (it resolves with the first delivery, `duplicate: true`), whatever its event and payload.
   * Kept for the run's lifetime. A webhook's delivery id is a good key.
   */
  key?: string;
}

/** What a send recorded: the event's place in the run's events, or the earlier one a key matched. */
export interface Delivery {
  runId: string;
  event: string;
  /** Order of arrival within the run, from 1. */
  seq: number;
  /** When it was recorded (ISO time). */
  sentAt: string;
  /** True when an earlier send with the same key recorded it, and this one changed nothing. */
  duplicate: boolean;
}

/** What the run waits for, while it is parked. */
export const waitingFor = (current: StoredRun): StoredWait | undefined =>
  current.run.status === "waiting" && current.run.waitingFor !== null ? (JSON.parse(current.run.waitingFor) as StoredWait) : undefined;

/** What the run does now, for a refusal's message. */
export function describeState(current: StoredRun): string {
  const waiting = waitingFor(current);
  if (waiting) return `waits for ${describeWait(waiting)}`;
  if (current.run.status === "waiting") return "has had its wait answered and is about to go on";
  return `is ${current.run.status}`;
}

/** The run's next event row. */
export function event(current: StoredRun, name: string, payload: string, now: number, key: string | null = null): EventRow {
  return { runId: current.run.id, seq: (current.events.at(-1)?.seq ?? 0) + 1, name, payload, sentAt: now, consumedBy: null, key };
}

const delivery = (e: EventRow, duplicate: boolean): Delivery => ({
  runId: e.runId,
  event: e.name,
  seq: e.seq,
  sentAt: new Date(e.sentAt).toISOString(),
  duplicate,
});

export async function sendEvent(
  store: Store,
  runId: string,
  name: string,
  payload: unknown,
  options: SendOptions,
  now: number,
  payloads: Payloads,
): Promise<Delivery> {
  checkName("event name", name);
  const key = options.key ?? null;
  const text = (await payloads.encode(payload, `The payload of event ${JSON.stringify(name)}`, { runId })).stored;
  const sent = await store.updateRun<Delivery | undefined>(runId, (current) => {
    // Sent before with this key: accepted, and nothing changes (whatever the run's state now).
    const earlier = key === null ? undefined : current.events.find((e) => e.key === key);
    if (earlier) return { result: delivery(earlier, true) };
    // A run sealed with a key this engine lacks takes no payload of ours (it would lie there in clear).
    const sealed = payloads.sealedBeyond(current);
    if (sealed) return { error: sealed, result: undefined };
    const waiting = waitingFor(current);
    const awaited = waiting?.kind === "event" && waiting.event === name;
    if (!awaited && options.keep !== true)
      return { error: new NotWaitingError(runId, `event ${JSON.stringify(name)}`, describeState(current), "event"), result: undefined };
    const row = event(current, name, text, now, key);
    // The wait is answered: the run is due now and waits for nothing else until it runs again.
    return { appendEvents: [row], ...(awaited ? { run: { wakeAt: now, waitingFor: null, updatedAt: now } } : {}), result: delivery(row, false) };
  });
  if (sent === undefined) throw new RunNotFoundError(runId, store.location);
  return sent;
}
