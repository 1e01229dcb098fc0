/**
 * The version rule: a record written by another major version (under 0.x, another minor)
 * is not reused silently. Versions that are not semver differ breakingly when unequal.
 */

export function isBreakingChange(recorded: string | null, current: string | undefined): boolean {
  if (recorded === null || current === undefined || recorded === current) return false;
  const a = parse(recorded);
  const b = parse(current);
  if (!a || !b) return true;
  if (a.major !== b.major) return true;
  return a.major === 0 && a.minor !== b.minor;
}

/** Semver (an optional leading v; major.minor, or major.minor.patch with pre-release and build). A commit hash or a date is not. */
const SEMVER = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)?$/;

function parse(version: string): { major: number; minor: number } | undefined {
  const match = SEMVER.exec(version.trim());
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]) };
}
