import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { root } from "./helpers.js";

// These run against dist/ (turbo builds before test), proving the published shape.
describe("the built package", () => {
  it("imports from dist through its exports and resolves the JSON Schema and meta.json subpaths", () => {
    const script = `
      const p = await import("@pheby/protocol");
      const ok = p.ClientMessage.safeParse({ type: "ping" }).success;
      const client = import.meta.resolve("@pheby/protocol/schema/client.json");
      const server = import.meta.resolve("@pheby/protocol/schema/server.json");
      const http = import.meta.resolve("@pheby/protocol/schema/http.json");
      const meta = import.meta.resolve("@pheby/protocol/schema/meta.json");
      const fixture = import.meta.resolve("@pheby/protocol/fixtures/valid/client/ping.json");
      console.log(JSON.stringify({ ok, main: import.meta.resolve("@pheby/protocol"), client, server, http, meta, fixture }));
    `;
    const out = JSON.parse(
      execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8" }),
    );
    expect(out.ok).toBe(true);
    expect(out.main).toMatch(/\/dist\/index\.js$/);
    expect(out.client).toMatch(/\/schema\/client\.schema\.json$/);
    expect(out.server).toMatch(/\/schema\/server\.schema\.json$/);
    expect(out.http).toMatch(/\/schema\/http\.schema\.json$/);
    expect(out.meta).toMatch(/\/schema\/meta\.json$/);
    expect(out.fixture).toMatch(/\/fixtures\/valid\/client\/ping\.json$/);
  });

  it("gives typed schemas to a TypeScript consumer (compiled against dist/*.d.ts)", () => {
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", "test/consumer/tsconfig.json"], { cwd: root, stdio: "pipe" });
  });
});
