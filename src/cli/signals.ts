/**
 * Ctrl-C while a command runs attempts: the first SIGINT (or SIGTERM) aborts the given
 * controller, so the attempt ends `cancelled` cleanly (the open step recorded failed, the lease
 * released); a second SIGINT exits at once with 130 (a crash: the run reads interrupted).
 */

import { EXIT } from "./exit.js";

export interface SignalGuard {
  /** The signal received, once one was. */
  readonly received: NodeJS.Signals | undefined;
  remove(): void;
}

export function guardSignals(controller: AbortController, say: (text: string) => void, what: string): SignalGuard {
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received !== undefined) {
      if (signal === "SIGINT") {
        say(`steplog: second interrupt: exiting at once; the run will read interrupted (a continue picks it up).`);
        process.exit(EXIT.interrupted);
      }
      return;
    }
    received = signal;
    say(`steplog: ${signal}: cancelling ${what} cleanly; press Ctrl-C again to exit at once.`);
    controller.abort(new Error(`received ${signal}`));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    get received() {
      return received;
    },
    remove() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
