import { describe, expect, it } from "vitest";
import { parseInline, parseMarkdown, safeHref } from "../src/markdown.js";

describe("safeHref", () => {
  it("keeps http(s) and mailto, drops every other scheme and relative URLs", () => {
    expect(safeHref("https://example.com/a?b=1")).toBe("https://example.com/a?b=1");
    expect(safeHref("mailto:ops@example.com")).toBe("mailto:ops@example.com");
    for (const bad of [
      "javascript:alert(1)",
      " JaVaScRiPt:alert(1)",
      "java\tscript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "vbscript:x",
      "/relative",
      "//evil.example/x",
      "file:///etc/passwd",
    ])
      expect(safeHref(bad), bad).toBeNull();
  });
});

describe("parseInline", () => {
  it("parses code, bold, italics and links, leaving HTML as plain text", () => {
    expect(parseInline("a `b<i>` **c** *d* [e](https://x.test/) <img src=x onerror=alert(1)>")).toEqual([
      { type: "text", text: "a " },
      { type: "code", text: "b<i>" },
      { type: "text", text: " " },
      { type: "strong", children: [{ type: "text", text: "c" }] },
      { type: "text", text: " " },
      { type: "em", children: [{ type: "text", text: "d" }] },
      { type: "text", text: " " },
      { type: "link", href: "https://x.test/", children: [{ type: "text", text: "e" }] },
      { type: "text", text: " <img src=x onerror=alert(1)>" },
    ]);
  });

  it("renders a javascript: link as its literal text", () => {
    expect(parseInline("[x](javascript:alert(1))")).toEqual([
      { type: "text", text: "[x](javascript:alert(1))" },
    ]);
    expect(parseInline("[x](javascript:void)")).toEqual([{ type: "text", text: "[x](javascript:void)" }]);
  });

  it("links bare URLs without trailing punctuation and keeps snake_case words", () => {
    expect(parseInline("see https://a.test/p. and my_var_name")).toEqual([
      { type: "text", text: "see " },
      { type: "link", href: "https://a.test/p", children: [{ type: "text", text: "https://a.test/p" }] },
      { type: "text", text: ". and my_var_name" },
    ]);
  });

  it("turns newlines into hard breaks", () => {
    expect(parseInline("a\nb")).toEqual([
      { type: "text", text: "a" },
      { type: "br" },
      { type: "text", text: "b" },
    ]);
  });
});

describe("parseMarkdown", () => {
  it("parses headings, lists, quotes, fences and paragraphs", () => {
    const blocks = parseMarkdown(
      "# Title\n\npara one\nline two\n\n- a\n- b\n\n1. x\n2) y\n\n> quoted\n\n```ts\n<script>x</script>\n```\nend",
    );
    expect(blocks.map((b) => b.type)).toEqual(["h", "p", "ul", "ol", "quote", "pre", "p"]);
    expect(blocks[5]).toEqual({ type: "pre", text: "<script>x</script>" });
    expect(blocks[2]).toEqual({
      type: "ul",
      items: [[{ type: "text", text: "a" }], [{ type: "text", text: "b" }]],
    });
  });

  it("keeps an unterminated fence's content as code", () => {
    expect(parseMarkdown("```\nstreaming <b>")).toEqual([{ type: "pre", text: "streaming <b>" }]);
  });
});
