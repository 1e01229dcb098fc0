/** steplog/testing: test a workflow's second attempt against seeded records. */
export { testWorkflow } from "../testing/test-workflow.js";
export { fakeClock } from "../testing/fake-clock.js";
export { describeStore, runRow, attemptRow, stepRow } from "../testing/store-conformance.js";
export type { StoreConformanceOptions, TestFunctions, AdditionalTests } from "../public/types.js";
export type { FakeClock } from "../public/types.js";
export type { TestWorkflowOptions, TestWorkflowResult, EarlierAttempt, CallKind } from "../public/types.js";
