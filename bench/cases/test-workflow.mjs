// Case 7: testWorkflow of a 10-step workflow on the memory store, per second. For reference,
// the same workflow code run against a bare context whose step just calls the function.

import { testWorkflow } from "steplog/testing";
import { defineWorkflow, interleave } from "../lib.mjs";
import { now } from "../lib.mjs";

const tenSteps = defineWorkflow({
  name: "bench-ten",
  async run(ctx, n) {
    let sum = 0;
    for (let i = 1; i <= n; i++) sum += (await ctx.step(`step-${i}`, async () => ({ ok: true, i }))).i;
    return sum;
  },
});

export async function testWorkflowCase(count) {
  const bare = { runId: "bare", attempt: 1, signal: new AbortController().signal, step: (_name, fn) => Promise.resolve(fn({})), stop() {} };
  const runTests = async () => {
    const t = now();
    for (let i = 0; i < count; i++) {
      const r = await testWorkflow(tenSteps, { args: 10 });
      if (r.status !== "completed" || r.ran.length !== 10) throw new Error(`case 7: ${r.status} ${JSON.stringify(r.error)}`);
    }
    return now() - t;
  };
  const runBare = async () => {
    const t = now();
    for (let i = 0; i < count; i++) await tenSteps.run(bare, 10);
    return now() - t;
  };
  await runTests();
  await runBare();
  const timing = await interleave(runBare, runTests);
  return {
    count,
    ...timing,
    baselinePerSec: (count * 1000) / timing.baselineMedianMs,
    steplogPerSec: (count * 1000) / timing.steplogMedianMs,
    usPerTest: (timing.steplogMedianMs * 1000) / count,
  };
}
