/**
 * One spelling for a store file's path, whichever path reached it: symlinks resolved (and, where
 * the filesystem ignores case, the case it stores). The file and its folder may not exist yet:
 * then the nearest folder that does is resolved and the rest appended as given. That rest may
 * still come to differ (created in another case, or as a symlink), so the stores keep the answer
 * only once the file exists.
 */

import fs from "node:fs";
import path from "node:path";

export function canonicalPath(file: string): string {
  const rest: string[] = [];
  let at = path.resolve(file);
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(at), ...rest);
    } catch {
      const parent = path.dirname(at);
      if (parent === at) return path.resolve(file);
      rest.unshift(path.basename(at));
      at = parent;
    }
  }
}
