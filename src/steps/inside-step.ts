/**
 * Internal: a step that runs inside another step's function (a tool call inside a Claude Code
 * session, durableClaudeQuery). The pivot rule (an irreversible step starts only when no other
 * step is in flight) does not count the step it runs inside: that one cannot finish first.
 */

/** On StepOptions: the key of the in-flight step this step runs inside (a string). */
export const INSIDE_STEP = Symbol("steplog.insideStep");
