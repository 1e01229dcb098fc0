/** steplog import <file>: load a document written by steplog export into this store (engine.import). */

import fs from "node:fs";
import path from "node:path";
import { ImportInvalidError } from "../../base/errors.js";
import { stringOption, type Parsed } from "../args.js";
import type { Command } from "../command.js";
import { redactUrl } from "../session.js";
import { EXIT, UsageError } from "../exit.js";
import { command, safe } from "../format.js";

export const importCommand: Command = {
  help: {
    name: "import",
    summary: "load a run written by steplog export into this store, owned by nobody, to continue or inspect",
    usage: ["steplog import <file>"],
    description: [
      "Writes the document's run (and the child runs in it) into the store named by --db or --store, in one transaction, creating the store if there is none. The run is owned by nobody: one cut off inside an attempt reads interrupted, and `steplog run --continue --id ID` goes on with it, reusing its succeeded steps.",
      "Refused, with nothing written: a run id the store already holds (IMPORT_RUN_EXISTS), a redacted document, a document of another format or version, or one that is not a run export (IMPORT_INVALID).",
    ],
    options: {},
    positionals: { min: 1, max: 1, names: ["<file>"] },
    examples: ["steplog import order-7.json --db incident.db", "steplog import order-7.json --store postgres://app@localhost/app"],
  },
  async run(session, parsed) {
    const file = path.resolve(session.io.cwd, parsed.positionals[0]!);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (error) {
      throw new UsageError(`Could not read ${file}: ${(error as Error).message}`, "Give the file steplog export --out wrote.");
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (error) {
      throw new ImportInvalidError("shape", `${file} is not JSON (${(error as Error).message}).`);
    }
    const engine = await session.engine();
    const imported = await engine.import(doc as never);
    const where = storeArgs(parsed);
    const next = command("steplog", "show", imported.id, ...where);
    if (session.json) session.printJson({ ...imported, store: session.describeStore(), next });
    else {
      const children = imported.runs.length - 1;
      session.out(
        `${session.paint("green", "✓")} run ${safe(imported.id)}${children > 0 ? ` and ${children} child run${children === 1 ? "" : "s"}` : ""} imported into ${safe(session.describeStore())}.`,
      );
      session.out(`to look at it: ${session.paint("cyan", next)}`);
      session.out(`to go on with it: ${session.paint("cyan", command("steplog", "run", "--continue", "--id", imported.id, ...where))}`);
    }
    return EXIT.ok;
  },
};

/** The store options this command was given, to repeat in the commands it suggests (a password in a URL hidden). */
export function storeArgs(parsed: Parsed): string[] {
  const db = stringOption(parsed, "db");
  const store = stringOption(parsed, "store");
  const schema = stringOption(parsed, "schema");
  return [
    ...(db === undefined ? [] : ["--db", db]),
    ...(store === undefined ? [] : ["--store", redactUrl(store)]),
    ...(schema === undefined ? [] : ["--schema", schema]),
  ];
}
