// The production build (turbo builds it before tests): what the CSP and the
// "works from any static host" promise depend on.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const dist = fileURLToPath(new URL("../dist/", import.meta.url));

describe.skipIf(!existsSync(`${dist}index.html`))("console build", () => {
  const html = readFileSync(`${dist}index.html`, "utf8");
  const scripts = readdirSync(`${dist}assets`).filter((f) => f.endsWith(".js"));

  it("has no inline script, style or handler, and only relative asset URLs", () => {
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    for (const [, url] of html.matchAll(/(?:src|href)="([^"]+)"/g)) expect(url).toMatch(/^\.\//);
  });

  it("does not bundle the ws package (browsers use their own WebSocket)", () => {
    expect(scripts.length).toBeGreaterThan(0);
    for (const file of scripts) {
      const code = readFileSync(`${dist}assets/${file}`, "utf8");
      expect(code).not.toContain("WebSocketServer");
      expect(code).not.toContain("permessage-deflate");
    }
  });
});
