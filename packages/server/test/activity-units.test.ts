/**
 * The activity module's parts on their own: the path base (with and without git), placing paths and
 * text, the redaction of output, and the 256 KiB bound of one tool event.
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LIMITS, type ToolContentBlock } from "@pheby/protocol";
import { describe, expect, it } from "vitest";
import { boundDetail, TOOL_EVENT_RESERVE_BYTES } from "../src/activity/bound.js";
import { cutBytes, unifiedDiff } from "../src/activity/diff.js";
import { pathBaseOf } from "../src/activity/path-base.js";
import { placePath, placeText } from "../src/activity/place.js";
import { outputText } from "../src/activity/redact-output.js";
import { ToolDetailBuilder } from "../src/activity/tool-detail.js";
import { HostPaths } from "../src/util/host-paths.js";

const temp = () => realpathSync(mkdtempSync(join(tmpdir(), "pheby-activity-")));

describe("the path base", () => {
  it("is the working directory when no git working tree holds it", () => {
    const dir = temp();
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    expect(pathBaseOf(join(dir, "a", "b"))).toBe(join(dir, "a", "b"));
  });

  it("is the root of the git working tree holding it (.git a directory or a file)", () => {
    const dir = temp();
    mkdirSync(join(dir, ".git"));
    mkdirSync(join(dir, "pkg", "src"), { recursive: true });
    expect(pathBaseOf(join(dir, "pkg", "src"))).toBe(dir);
  });
});

describe("placing paths and text", () => {
  const ctx = { cwd: "/srv/repo/pkg", base: "/srv/repo", scrub: (t: string) => t.replaceAll("/root", "~") };

  it("makes paths inside the base relative, relative ones from the working directory; outside: null and scrubbed", () => {
    expect(placePath("/srv/repo/src/a.ts", ctx)).toEqual({
      path: "src/a.ts",
      display: "src/a.ts",
      outside: false,
    });
    expect(placePath("lib/b.ts", ctx)).toEqual({
      path: "pkg/lib/b.ts",
      display: "pkg/lib/b.ts",
      outside: false,
    });
    expect(placePath("../../../etc/passwd", ctx)).toEqual({
      path: null,
      display: "/etc/passwd",
      outside: true,
    });
    expect(placePath("/root/x", ctx)).toEqual({ path: null, display: "~/x", outside: true });
  });

  it("rewrites the base in text only as a whole path, never inside a longer name", () => {
    expect(placeText("edit /srv/repo/src/a.ts in /srv/repo", ctx)).toBe("edit src/a.ts in .");
    expect(placeText("/srv/repository/x and /x/srv/repo/y", ctx)).toBe("/srv/repository/x and /x/srv/repo/y");
  });

  it("knows the base and the server's directories named relative to / (OpenCode's titles outside git)", () => {
    // As OpenCode titles a completed write when its worktree root is `/`: the path without its leading `/`.
    const dir = temp();
    const work = join(dir, "pheby-opencode-x");
    mkdirSync(work);
    const home = join(dir, "home");
    const scrubber = new HostPaths({ workdirs: [work], homes: [home] });
    const real = { cwd: work, base: work, scrub: (t: string) => scrubber.scrub(t) };
    const rootless = (path: string) => path.slice(1);
    expect(placeText(rootless(join(work, "activity.txt")), real)).toBe("activity.txt");
    expect(placeText(`Write ${rootless(join(work, "src", "a.ts"))}`, real)).toBe("Write src/a.ts");
    expect(placeText(rootless(work), real)).toBe(".");
    expect(placeText(rootless(join(home, ".config", "x")), real)).toBe("~/.config/x");
    // Never inside a longer name or as the tail of another path; a one-segment base stays as given.
    expect(placeText(`x${rootless(join(work, "a"))} /y/${rootless(join(work, "a"))}`, real)).toBe(
      `x${rootless(join(work, "a"))} /y/${rootless(join(work, "a"))}`,
    );
    expect(placeText("w/a.txt", { cwd: "/w", base: "/w", scrub: (t: string) => t })).toBe("w/a.txt");
  });
});

describe("output", () => {
  const ctx = { cwd: "/w", base: "/w", scrub: (t: string) => t };

  it("keeps 16,000 characters whole and the last 16,000 of more", () => {
    const exact = "é".repeat(LIMITS.toolTextChars);
    expect(outputText(exact, ctx)).toEqual({ text: exact, truncated: false });
    expect(outputText(`x${exact}`, ctx)).toEqual({ text: exact, truncated: true });
  });

  it("redacts an .env file's every value, other text by pattern", () => {
    expect(outputText("A=1\nSECRET_TOKEN=abc\n", ctx, { envFile: true }).text).toBe(
      "A=[REDACTED]\nSECRET_TOKEN=[REDACTED]\n",
    );
    expect(outputText("A=1\nSECRET_TOKEN=abc\n", ctx).text).toBe("A=1\nSECRET_TOKEN=[REDACTED]\n");
  });
});

describe("diffs and the event bound", () => {
  it("an empty old text for a file that does not exist (Qwen Code's new file) is a new file, not a fragment", async () => {
    const dir = temp();
    const tools = new ToolDetailBuilder({ cwd: dir, base: dir, scrub: (t) => t });
    const diffOf = async (id: string, path: string) =>
      (
        await tools.update(id, {
          kind: "edit",
          content: [{ type: "diff", path, oldText: "", newText: "a\nb\n" }],
        })
      )?.content?.[0];
    expect(await diffOf("new", join(dir, "new.txt"))).toEqual({
      type: "diff",
      path: "new.txt",
      display: "new.txt",
      outside: false,
      patch: "--- /dev/null\n+++ new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n",
      additions: 2,
      deletions: 0,
      fragment: false,
      truncated: false,
    });
    // An empty file: a true file diff of it.
    writeFileSync(join(dir, "empty.txt"), "");
    expect(await diffOf("empty", join(dir, "empty.txt"))).toMatchObject({ fragment: false, additions: 2 });
    // A file with text: `""` is then a fragment (an insertion).
    writeFileSync(join(dir, "full.txt"), "x\n");
    expect(await diffOf("full", join(dir, "full.txt"))).toMatchObject({ fragment: true, additions: 2 });
  });

  it("cuts a patch to 64 KiB at a line end", () => {
    const lines = Array.from({ length: 5_000 }, (_, i) => `line ${i} ${"é".repeat(10)}`).join("\n");
    const diff = unifiedDiff({ name: "a.txt", oldText: null, newText: lines, fragment: false });
    expect(diff.truncated).toBe(true);
    expect(diff.additions).toBe(5_000);
    expect(Buffer.byteLength(diff.patch)).toBeLessThanOrEqual(LIMITS.toolPatchBytes);
    expect(diff.patch.endsWith("\n")).toBe(true);
    expect(cutBytes("abc", 3)).toEqual({ text: "abc", truncated: false });
  });

  it("leaves an event at the limit alone, and cuts one byte over from its last block", () => {
    const event = {
      type: "tool.event",
      conversation_id: "c",
      tool_call_id: "t",
      tool_name: "x",
      status: "running",
      ts: "t",
    };
    const limit = LIMITS.toolEventBytes - TOOL_EVENT_RESERVE_BYTES;
    const sized = (bytes: number) => {
      const content: ToolContentBlock[] = [
        { type: "text", text: "first", truncated: false },
        { type: "text", text: "", truncated: false },
      ];
      const size = () => Buffer.byteLength(JSON.stringify({ ...event, kind: "execute", content }));
      content[1] = { type: "text", text: "y".repeat(bytes - size()), truncated: false };
      expect(size()).toBe(bytes);
      return { kind: "execute" as const, content };
    };
    const at = sized(limit);
    expect(boundDetail(event, at)).toBe(at);
    const over = boundDetail(event, sized(limit + 1));
    expect(Buffer.byteLength(JSON.stringify({ ...event, ...over }))).toBeLessThanOrEqual(limit);
    expect(over.content![0]).toEqual({ type: "text", text: "first", truncated: false });
    expect(over.content![1]).toMatchObject({ truncated: true });
  });
});
