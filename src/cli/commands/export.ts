/** steplog export <id> [--out FILE] [--children]: the run as one JSON document (engine.export). */

import fs from "node:fs";
import path from "node:path";
import { booleanOption, stringOption } from "../args.js";
import type { Command } from "../command.js";
import { CliError, EXIT } from "../exit.js";
import { command, safe, terminalJson } from "../format.js";
import type { ExportedRun } from "../../operations/export.js";

export const exportCommand: Command = {
  help: {
    name: "export",
    summary: "a run as one JSON document (its run, attempts, steps and events as stored), to import into another store",
    usage: ["steplog export <id> [--out FILE] [--children]"],
    description: [
      "Prints the run as one versioned JSON document (format steplog-run, version 1): every row it owns as the store holds it. A value sealed with the app's key stays sealed (the document holds no key). --out FILE writes it there instead (owner-only). steplog import FILE loads it into another store, where a continue goes on with it.",
      "With --redact PATHS (or STEPLOG_REDACT) every value is decoded (STEPLOG_KEYS for a sealed store), passed through those rules and written plain, and the document is marked redacted: for reading and sharing, not for importing.",
    ],
    options: {
      out: {
        type: "string",
        value: "FILE",
        description: "Write the document to FILE (created owner-only; an existing file is replaced) instead of printing it.",
      },
      children: { type: "boolean", description: "Include the run's child runs (and theirs), oldest first." },
    },
    positionals: { min: 1, max: 1, names: ["<id>"] },
    examples: ["steplog export order-7 --out order-7.json", "steplog export order-7 --children > order-7.json", "steplog export order-7 --redact card,token"],
  },
  async run(session, parsed) {
    const id = parsed.positionals[0]!;
    const children = booleanOption(session.parsed, "children");
    const redact = session.redacting();
    const doc = await session.read((engine) => engine.export(id, { ...(children ? { children } : {}), ...(redact ? { redact } : {}) }));
    const text = JSON.stringify(doc, null, 2) + "\n";
    const outFile = stringOption(parsed, "out");
    if (outFile === undefined) {
      // Characters a terminal would act on are escaped: the same JSON, parsed.
      session.io.stdout.write(terminalJson(text));
      return EXIT.ok;
    }
    const written = path.resolve(session.io.cwd, outFile);
    try {
      // Owner-only, as the stores are: the document holds the run's values.
      fs.writeFileSync(written, text, { mode: 0o600 });
      fs.chmodSync(written, 0o600);
    } catch (error) {
      throw new CliError(`Could not write ${written}: ${(error as Error).message}`, EXIT.usage, "EXPORT_NOT_WRITTEN");
    }
    const runs = countRuns(doc);
    const next = doc.redacted ? undefined : command("steplog", "import", written);
    if (session.json) session.printJson({ id, out: written, runs, steps: countSteps(doc), redacted: doc.redacted === true, ...(next ? { next } : {}) });
    else {
      session.out(
        `Run ${safe(id)}${runs > 1 ? ` and ${runs - 1} child run${runs === 2 ? "" : "s"}` : ""} exported to ${safe(written)}${doc.redacted ? " (redacted: for reading, not for importing)" : ""}.`,
      );
      if (next) session.out(`to load it into another store: ${session.paint("cyan", `${next} --db <file>`)} (or --store <url>)`);
    }
    return EXIT.ok;
  },
};

function countRuns(rows: ExportedRun): number {
  return 1 + (rows.children ?? []).reduce((n, child) => n + countRuns(child), 0);
}

function countSteps(rows: ExportedRun): number {
  return rows.steps.length + (rows.children ?? []).reduce((n, child) => n + countSteps(child), 0);
}
