// How the demo prints steplog's progress events: one short line per step.

const colour = process.stdout.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== "dumb";
const paint = (code) => (text) => (colour ? `\x1b[${code}m${text}\x1b[0m` : text);
export const green = paint("32");
export const yellow = paint("33");
export const red = paint("31");
export const dim = paint("2");
export const bold = paint("1");

const pad = (step) => step.padEnd(8);

/** A line for one ProgressEvent, or undefined for events the demo does not show. */
export function progressLine(event) {
  switch (event.type) {
    case "step-started":
      return `${dim("…")} ${pad(event.step)} started ${dim("(its intent is recorded)")}`;
    case "step-reused":
      return `${green("↺")} ${pad(event.step)} ${dim(`(reused from attempt ${event.recordedBy})`)}`;
    case "step-resolved":
      return event.policy === "redrive"
        ? `${yellow("?")} ${pad(event.step)} found cut off, outcome unknown → re-driven with the same idempotency key`
        : `${yellow("?")} ${pad(event.step)} found cut off, outcome unknown → ${event.policy}: ${event.found}`;
    case "step-succeeded":
      return `${green("✓")} ${pad(event.step)} ${dim(`(${event.durationMs} ms)`)}`;
    case "step-failed":
      return `${red("✗")} ${pad(event.step)} ${event.error.message}`;
    default:
      return undefined;
  }
}
