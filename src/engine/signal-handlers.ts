/**
 * SIGINT/SIGTERM while attempts run (the engine's handleSignals option). The first signal
 * cancels them cleanly; a second SIGINT before they have ended exits at once, which is a
 * crash: the run reads interrupted. With no attempt running the handlers are not installed,
 * so the app's own signal behaviour is untouched.
 */

const SIGNALS = ["SIGINT", "SIGTERM"] as const;

export class SignalHandlers {
  #installed = false;
  #cancelling = false;
  readonly #onSignal = (signal: NodeJS.Signals) => this.#handle(signal);

  constructor(
    private readonly cancelAll: (signal: NodeJS.Signals) => Promise<unknown>,
    private readonly running: () => number,
  ) {}

  install(): void {
    if (this.#installed) return;
    this.#installed = true;
    for (const signal of SIGNALS) process.on(signal, this.#onSignal);
  }

  uninstall(): void {
    if (!this.#installed) return;
    this.#installed = false;
    this.#cancelling = false;
    for (const signal of SIGNALS) process.off(signal, this.#onSignal);
  }

  #handle(signal: NodeJS.Signals): void {
    if (this.#cancelling) {
      if (signal === "SIGINT") {
        process.stderr.write("steplog: second interrupt, exiting at once; the run will read interrupted.\n");
        process.exit(130);
      }
      return;
    }
    if (this.running() === 0) return this.uninstall();
    this.#cancelling = true;
    process.stderr.write(`steplog: ${signal}: cancelling the running attempt(s) cleanly; press Ctrl-C again to exit at once.\n`);
    void this.cancelAll(signal).then(() => this.uninstall());
  }
}
