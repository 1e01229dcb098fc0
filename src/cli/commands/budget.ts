/** steplog budget <id> [--usd N] [--tokens N]: raise the budget of a run parked on it (docs/budgets.md). */

import { stringOption, type Parsed } from "../args.js";
import type { Command } from "../command.js";
import { EXIT, UsageError } from "../exit.js";
import { command, formatUsd, safe } from "../format.js";

/** A limit given on the command line: a positive number (the engine checks it too). */
function limitOption(parsed: Parsed, name: "usd" | "tokens"): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  const n = Number(text.trim());
  if (text.trim() === "" || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`steplog budget: --${name} must be a positive number, got ${JSON.stringify(text)}.`);
  return n;
}

export const budget: Command = {
  help: {
    name: "budget",
    summary: "raise the budget of a run parked on it (waiting for budget); a worker then goes on",
    usage: ["steplog budget <id> [--usd N] [--tokens N]"],
    description: [
      "New limits for the run's budget: absolute (not added), each above what it has spent (see steplog show); a limit left out stays. The run, and the child runs that draw on its budget and are parked on it, are woken: `steplog work` (or a worker in your app) picks them up, or continue it yourself with `steplog run --continue --id ID`.",
    ],
    options: {
      usd: { type: "string", value: "N", description: "The new limit in US dollars." },
      tokens: { type: "string", value: "N", description: "The new limit in tokens (input and output)." },
    },
    positionals: { min: 1, max: 1, names: ["<id>"] },
  },
  async run(session, parsed) {
    const [id] = parsed.positionals as [string];
    const usd = limitOption(parsed, "usd");
    const tokens = limitOption(parsed, "tokens");
    if (usd === undefined && tokens === undefined)
      throw new UsageError("steplog budget: give --usd N, --tokens N or both.", "Usage: steplog budget <id> [--usd N] [--tokens N]");
    const engine = await session.engine();
    const raised = await engine.raiseBudget(id, { ...(usd === undefined ? {} : { usd }), ...(tokens === undefined ? {} : { tokens }) });
    const next = [command("steplog", "work"), command("steplog", "run", "--continue", "--id", id)];
    if (session.json) session.printJson({ id, budget: raised, next });
    else {
      const limits = [
        raised.usd === undefined ? "" : formatUsd(raised.usd),
        raised.tokens === undefined ? "" : `${raised.tokens.toLocaleString("en-US")} tokens`,
      ]
        .filter(Boolean)
        .join(", ");
      session.out(`${session.paint("green", "✓")} budget of run ${safe(id)} raised to ${limits}.`);
      session.out(`next: ${session.paint("cyan", next[0]!)}  ${session.paint("gray", "or")}  ${session.paint("cyan", next[1]!)}`);
    }
    return EXIT.ok;
  },
};
