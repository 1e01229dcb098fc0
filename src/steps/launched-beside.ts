/**
 * Internal: a step launched beside the start point of a continue (see CallOrder.siblingsOf in call-order.ts) whose
 * turn to run comes later — an irreversible tool call waits behind the other calls of its turn —
 * is still recognised as launched beside it, so its succeeded record is reused. Its inputs were
 * fixed when it was launched.
 */

/**
 * On a WorkflowContext: while steps entered now count as launched beside the start point, the
 * newest attempt whose record has been handed back so far (see CallOrder.newestReused); else
 * undefined.
 */
export const IN_SIBLING_WINDOW = Symbol("steplog.inSiblingWindow");

/** On StepOptions: what IN_SIBLING_WINDOW said when this step was launched (a number). */
export const LAUNCHED_BESIDE_START = Symbol("steplog.launchedBesideStart");
