/**
 * Store files are owner-only: step values may hold tokens and customer data. A store creates
 * its folder 0700 (with a .gitignore of `*`, so runs never enter git by accident) and its file
 * 0600, and says once when an existing file can be read by other users.
 */

import fs from "node:fs";
import path from "node:path";

/** Create the folder and the empty file if missing. True when this call created the file. */
export function createOwnerOnlyFile(file: string): boolean {
  const dir = path.dirname(file);
  const madeDir = !fs.existsSync(dir);
  if (madeDir) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, ".gitignore"), "*\n", { mode: 0o600 });
  }
  try {
    fs.closeSync(fs.openSync(file, "wx", 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  }
  // The new names must survive a power loss too, not only what is written into the file: fsync
  // the folder that holds the file and, if we made that folder, the one that holds it.
  syncDir(dir);
  if (madeDir) syncDir(path.dirname(dir));
  return true;
}

/** fsync a folder (best effort: some platforms cannot open one). */
function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Windows cannot open a folder; there the file system orders these names itself.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Warn (once per call site's choosing) when other users may read an existing store file. */
export function warnIfShared(file: string, location: string, warn: (message: string) => void): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return; // a file that cannot be stat'ed is reported when it is opened
  }
  const mode = stat.mode & 0o777;
  if ((mode & 0o077) === 0) return;
  // Another user's file (a shared folder): only its owner can chmod it. (No uids on Windows.)
  const mine = process.getuid === undefined || stat.uid === process.getuid();
  const who = mine ? "Restrict it" : `Its owner (uid ${stat.uid}) can restrict it`;
  warn(
    `steplog: the ${location} can be read by other users (mode ${mode.toString(8).padStart(3, "0")}); ` +
      `step values may hold secrets. ${who}: chmod 600 ${file}` +
      (location.startsWith("sqlite") ? " (and its -wal and -shm files)." : "."),
  );
}
