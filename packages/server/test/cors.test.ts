import { describe, expect, it } from "vitest";
import { createConversation, useServerWithTwoClients } from "./helpers.js";
import { http } from "./http.js";

const CONSOLE = "https://console.example.com";
const preflight = (origin: string, path = "/attachments?conversation_id=x&filename=a.png") => ({
  origin,
  "access-control-request-method": "POST",
  "access-control-request-headers": "authorization, content-type",
  path,
});

describe("CORS on the attachment routes", () => {
  describe("off by default", () => {
    const env = useServerWithTwoClients();

    it("sends no CORS headers and answers no preflight", async () => {
      const { path, ...headers } = preflight(CONSOLE);
      const res = await http(env.ts.url, "OPTIONS", path, { headers, auth: false });
      expect(res.status).toBe(404);
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
      const get = await http(env.ts.url, "GET", `/attachments/${"0".repeat(32)}`, {
        headers: { origin: CONSOLE },
      });
      expect(get.status).toBe(404);
      expect(get.headers["access-control-allow-origin"]).toBeUndefined();
    });
  });

  describe("with corsOrigins", () => {
    const env = useServerWithTwoClients({ corsOrigins: [CONSOLE] });

    it("answers a listed origin's preflight, without credentials, with exactly what uploads and downloads need", async () => {
      const { path, ...headers } = preflight(CONSOLE);
      const res = await http(env.ts.url, "OPTIONS", path, { headers, auth: false });
      expect(res.status).toBe(204);
      expect(res.headers["access-control-allow-origin"]).toBe(CONSOLE);
      expect(res.headers["access-control-allow-methods"]).toBe("GET, POST");
      expect(res.headers["access-control-allow-headers"]).toBe(
        "Authorization, Content-Type, X-Pheby-Secret, Range",
      );
      expect(res.headers.vary).toBe("Origin");
      expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
    });

    it("ignores an origin that is not listed", async () => {
      const { path, ...headers } = preflight("https://evil.example");
      const res = await http(env.ts.url, "OPTIONS", path, { headers, auth: false });
      expect(res.status).toBe(404);
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    });

    it("marks uploads, streamed downloads and errors readable by the listed origin; auth is still required", async () => {
      const id = await createConversation(env.a);
      const up = await http(env.ts.url, "POST", `/attachments?conversation_id=${id}&filename=a.txt`, {
        headers: { origin: CONSOLE, "content-type": "text/plain" },
        body: Buffer.from("hello"),
      });
      expect(up.status).toBe(201);
      expect(up.headers["access-control-allow-origin"]).toBe(CONSOLE);
      const { attachment } = JSON.parse(up.body.toString()) as { attachment: { download_path: string } };

      const down = await http(env.ts.url, "GET", attachment.download_path, {
        headers: { origin: CONSOLE, range: "bytes=0-1" },
      });
      expect(down.status).toBe(206);
      expect(down.body.toString()).toBe("he");
      expect(down.headers["access-control-allow-origin"]).toBe(CONSOLE);
      expect(down.headers["access-control-expose-headers"]).toContain("Content-Disposition");

      const denied = await http(env.ts.url, "GET", attachment.download_path, {
        headers: { origin: CONSOLE },
        auth: false,
      });
      expect(denied.status).toBe(401);
      expect(denied.headers["access-control-allow-origin"]).toBe(CONSOLE);
    });
  });
});
