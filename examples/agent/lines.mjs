// How the agent example prints steplog's progress events: one short line per step.

const colour = process.stdout.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== "dumb";
const paint = (code) => (text) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
export const green = paint("32");
export const yellow = paint("33");
export const red = paint("31");
export const dim = paint("2");
export const bold = paint("1");

const pad = (step) => step.padEnd(30);

/** A line for one ProgressEvent, or undefined for events the example does not show. */
export function progressLine(event) {
  switch (event.type) {
    case "step-started":
      return event.step.startsWith("tool:sendEmail:") ? `${dim("…")} ${pad(event.step)} ${dim("started (its intent is recorded)")}` : undefined;
    case "step-reused":
      return `${green("↺")} ${pad(event.step)} ${dim(`reused from attempt ${event.recordedBy}: not run, not asked`)}`;
    case "step-resolved":
      return `${yellow("?")} ${pad(event.step)} found cut off, outcome unknown → ${event.policy}: ${event.found}`;
    case "step-succeeded":
      return `${green("✓")} ${pad(event.step)} ${dim(`(${event.durationMs} ms)`)}`;
    case "step-failed":
      return `${red("✗")} ${pad(event.step)} ${event.error.message}`;
    default:
      return undefined;
  }
}
