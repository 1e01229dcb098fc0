/** The workflow of a recorded run: from a file given on the command line, or the run's recorded source. */

import { WorkflowLoadError } from "../exit.js";
import { command } from "../format.js";
import { loadWorkflowFile, type LoadedWorkflow } from "../load-workflow.js";
import type { Session } from "../session.js";

export async function loadRunWorkflow(session: Session, id: string, file: string | undefined, commandName = "compensate"): Promise<LoadedWorkflow> {
  const view = await session.read((engine) => engine.get(id));
  const source = file ?? view.source ?? undefined;
  if (source === undefined) {
    throw new WorkflowLoadError(
      `Run ${JSON.stringify(id)} has no recorded source (it was started by an app, not by steplog run), so its workflow file is unknown: give the file that defines workflow ${JSON.stringify(view.workflow)}.`,
      command("steplog", commandName, id, "--workflow", "<file>"),
    );
  }
  const loaded = await loadWorkflowFile(source, session.io.cwd, view.workflow);
  if (loaded.workflow.name !== view.workflow) {
    throw new WorkflowLoadError(
      `${loaded.file} defines workflow ${JSON.stringify(loaded.workflow.name)}, but run ${JSON.stringify(id)} belongs to ${JSON.stringify(view.workflow)}.`,
    );
  }
  return loaded;
}
