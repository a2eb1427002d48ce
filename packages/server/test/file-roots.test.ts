// The allowed file roots keep the data directory out even when a root (a workspace) contains it:
// a file inside it, the directory itself, and a symlink from the root into it are all refused.
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileRoots } from "../src/files/roots.js";
import { useTempDirs } from "./helpers.js";

const temp = useTempDirs();

describe("FileRoots: the data directory is never a root's", () => {
  it("allows the workspace's files and refuses what lies in the data directory inside it", async () => {
    const workspace = realpathSync(temp());
    const data = join(workspace, ".pheby");
    mkdirSync(data);
    writeFileSync(join(workspace, "report.txt"), "ok");
    writeFileSync(join(data, "secret"), "no");
    symlinkSync(join(data, "secret"), join(workspace, "link"));
    const roots = new FileRoots([workspace], () => {}, [data]);
    expect(await roots.resolve(join(workspace, "report.txt"))).toBe(join(workspace, "report.txt"));
    expect(await roots.resolve(join(data, "secret"))).toBeNull();
    expect(await roots.resolve(data)).toBeNull();
    expect(await roots.resolve(join(workspace, "link"))).toBeNull();
    // Without the exception the same root would hand it out: the test can fail.
    expect(await new FileRoots([workspace]).resolve(join(data, "secret"))).toBe(join(data, "secret"));
  });
});
