/** steplog approvals: the steps parked for a person's approval, each with the input to be approved. */

import type { Command } from "../command.js";
import { EXIT } from "../exit.js";
import { columns, command, formatAge, oneLineJson, safe } from "../format.js";

export const approvals: Command = {
  help: {
    name: "approvals",
    summary: "the approval queue: steps parked for approval (approval: true), each with what it acts on",
    usage: ["steplog approvals [--json]"],
    description: [
      "Each entry is a run parked before a step with `approval: true`: the step, the input it would act on (one line; --json has all of it, redacted by --redact like the other views) and that input's digest. Approve what you saw with `steplog approve ID STEP --input-digest DIGEST`: if the input changed since (a continue with fixed code), it is refused with APPROVAL_STALE and you look again. An entry marked stale was approved before for another input; both inputs are shown.",
    ],
    options: {},
    positionals: { min: 0, max: 0, names: [] },
  },
  async run(session) {
    const list = await session.read((engine) => engine.approvals({ redact: true }));
    const next = (runId: string, step: string, digest: string | undefined) => [
      digest === undefined ? command("steplog", "approve", runId, step) : command("steplog", "approve", runId, step, "--input-digest", digest),
      command("steplog", "reject", runId, step, "--reason", "<why>"),
    ];
    if (session.json) {
      session.printJson(list.map((a) => ({ ...a, next: next(a.runId, a.step, a.inputDigest) })));
      return EXIT.ok;
    }
    if (list.length === 0) {
      session.out(session.paint("gray", `No run waits for an approval in ${session.describeStore()}.`));
      return EXIT.ok;
    }
    const now = session.now();
    for (const a of list) {
      const stale = a.stale ? ` ${session.paint("yellow", "stale")}` : "";
      session.out(
        `${session.paint("cyan", "?")} ${session.paint("bold", `${safe(a.runId)} · ${safe(a.step)}`)} ${session.paint("gray", `(${safe(a.workflow)})`)}${stale}`,
      );
      const [approve, reject] = next(a.runId, a.step, a.inputDigest);
      const input = "input" in a ? oneLineJson(a.input, 100) : a.inputSealed !== undefined ? `(sealed with key ${a.inputSealed})` : undefined;
      const rows: string[][] = [["  waiting", formatAge(Date.parse(a.since), now)]];
      if (input !== undefined) rows.push(["  input", safe(input)]);
      if (a.inputDigest !== undefined) rows.push(["  digest", safe(a.inputDigest)]);
      if (a.stale) {
        rows.push(["  approved before", `${a.stale.by ? `by ${safe(a.stale.by)} ` : ""}at ${safe(a.stale.at)}, for another input`]);
        rows.push(["    it approved", safe(a.stale.previews.approved)]);
        rows.push(["    now", safe(a.stale.previews.now)]);
      }
      rows.push(["  approve", session.paint("cyan", approve!)], ["  reject", session.paint("cyan", reject!)]);
      session.lines(columns(rows));
    }
    return EXIT.ok;
  },
};
