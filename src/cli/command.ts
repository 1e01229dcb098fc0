/** The shape of one command: its help (options, usage) and what it does. */

import type { CommandHelp, Parsed } from "./args.js";
import type { ExitCode } from "./exit.js";
import type { Session } from "./session.js";

export interface Command {
  help: CommandHelp;
  run(session: Session, parsed: Parsed): Promise<ExitCode>;
}
