import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPhebyServer } from "../src/index.js";
import { SECRET, startServer, type TestServer, tempDir } from "./helpers.js";

/** A raw GET, so paths like /console/../x reach the server unnormalised. */
function rawGet(
  url: string,
  path: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: "GET" }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.path = path;
    req.on("error", reject);
    req.end();
  });
}

describe("static console", () => {
  let dir: string;
  let ts: TestServer;
  beforeAll(async () => {
    dir = tempDir();
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>console</title>");
    writeFileSync(join(dir, "assets", "app-abc123.js"), "console.log(1)");
    writeFileSync(join(dir, "assets", "weird.bin"), "x");
    ts = await startServer({ staticConsoleDir: dir });
    // A file next to the console that must never be reachable.
    writeFileSync(join(ts.dataDir, "secret"), SECRET);
  });
  afterAll(async () => {
    await ts.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("redirects /console to /console/ and serves index.html with safe headers", async () => {
    const redirect = await fetch(`${ts.url}/console`, { redirect: "manual" });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get("location")).toBe("/console/");
    const res = await fetch(`${ts.url}/console/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("<title>console</title>");
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect((await fetch(`${ts.url}/console/index.html`)).status).toBe(200);
  });

  it("serves hashed assets as immutable with their type, unknown types as octet-stream", async () => {
    const js = await fetch(`${ts.url}/console/assets/app-abc123.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect(await js.text()).toBe("console.log(1)");
    const bin = await fetch(`${ts.url}/console/assets/weird.bin`);
    expect(bin.headers.get("content-type")).toBe("application/octet-stream");
    expect(bin.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("answers anything else with the JSON 404, never a file outside the build", async () => {
    for (const path of [
      "/console/missing.js",
      "/console/../secret",
      "/console/%2e%2e/secret",
      "/console/assets/../../secret",
      "/console/assets/%2e%2e%2f%2e%2e%2fsecret",
      "/console//etc/passwd",
      "/console/assets",
    ]) {
      const res = await rawGet(ts.url, path);
      expect(res.body, path).not.toContain(SECRET);
      if (res.status === 200) expect(res.body, path).toContain("<title>console</title>");
      else {
        expect(res.status, path).toBe(404);
        expect(JSON.parse(res.body), path).toEqual({ error: { code: "not_found", message: "Not found" } });
      }
    }
  });

  it("is off by default", async () => {
    const plain = await startServer();
    try {
      expect((await fetch(`${plain.url}/console/`)).status).toBe(404);
    } finally {
      await plain.cleanup();
    }
  });

  it("refuses a directory without index.html", () => {
    const empty = tempDir();
    try {
      expect(() =>
        createPhebyServer({ secret: SECRET, dataDir: join(empty, "data"), staticConsoleDir: empty }),
      ).toThrow(/no index.html/);
      expect(existsSync(join(empty, "data")), "no store was created").toBe(false);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
