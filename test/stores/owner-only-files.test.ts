// A new store file, and a new folder for it, are made durable names: the folders that hold them
// are fsynced, not only what is written into the file.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createOwnerOnlyFile } from "../../src/store/owner-only-files.js";
import { tmpDir } from "../helpers/tmp.js";

afterEach(() => vi.restoreAllMocks());

/** The paths that were opened read-only and then fsynced. */
function syncedFolders(): () => string[] {
  const opened = new Map<number, string>();
  const synced: string[] = [];
  const open = fs.openSync;
  vi.spyOn(fs, "openSync").mockImplementation(((file: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
    const fd = open(file, flags ?? "r", mode);
    if (flags === "r") opened.set(fd, String(file));
    return fd;
  }) as typeof fs.openSync);
  const fsync = fs.fsyncSync;
  vi.spyOn(fs, "fsyncSync").mockImplementation((fd: number) => {
    const folder = opened.get(fd);
    if (folder) synced.push(folder);
    return fsync(fd);
  });
  return () => synced;
}

describe("createOwnerOnlyFile", () => {
  it("fsyncs the new folder and its parent when it makes the folder, and the folder alone when it exists", () => {
    const root = tmpDir();
    const synced = syncedFolders();
    const folder = path.join(root, ".steplog");
    expect(createOwnerOnlyFile(path.join(folder, "steplog.db"))).toBe(true);
    expect(synced()).toEqual([folder, root]);
    expect(createOwnerOnlyFile(path.join(folder, "other.db"))).toBe(true);
    expect(synced()).toEqual([folder, root, folder]);
    // An existing file: nothing created, nothing synced.
    expect(createOwnerOnlyFile(path.join(folder, "other.db"))).toBe(false);
    expect(synced()).toEqual([folder, root, folder]);
    expect(fs.statSync(folder).mode & 0o777).toBe(0o700);
  });
});
