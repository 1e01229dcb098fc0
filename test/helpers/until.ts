/**
 * Poll `condition` until it holds; give up with a message naming `what` after `ms` (generous: a
 * loaded machine is slow, and a condition that holds ends the wait at once).
 */
export async function until(what: string, condition: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
