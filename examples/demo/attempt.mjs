// Attempt 1 of the demo, in a process of its own: start the run and die inside step two.
// usage: node examples/demo/attempt.mjs <run id> <topic>   (main.mjs sets the env)

import { progressLine } from "./lines.mjs";
import { openEngine, say, writePost } from "./workflow.mjs";

const [runId, topic] = process.argv.slice(2);
const engine = openEngine((event) => {
  const line = progressLine(event);
  if (line) say(line);
});

const result = await engine.start(writePost, { topic }, { id: runId });
// Only reached if the crash did not happen; main.mjs reports it as a failed check.
say(`attempt 1 ended without a crash: ${result.status}`);
await engine.close();
