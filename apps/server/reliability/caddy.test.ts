// A real TLS front, as docs/deployment.md tells operators to run one. Debian's Caddy runs the site block of
// docs/deployment.md (identical to apps/server/deploy/Caddyfile; host name and upstream port substituted)
// with its internal CA, on 127.0.0.1 only, with no network: no ACME, no OCSP, no redirects, admin API off.
// The test trusts Caddy's root CA from its data dir (XDG_DATA_HOME in a temp dir).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLOSE_CODES } from "@pheby/protocol";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, freePort, Peer, SECRET, startApp, tempDir, waitFor } from "./harness.js";

const DOCS = fileURLToPath(new URL("../../../docs/deployment.md", import.meta.url));
const DEPLOY = fileURLToPath(new URL("../deploy/Caddyfile", import.meta.url));

/** The ```caddy block of docs/deployment.md. */
function docsCaddyfile(): string {
  const match = /```caddy\n([\s\S]*?)```/.exec(readFileSync(DOCS, "utf8"));
  if (!match) throw new Error("docs/deployment.md has no ```caddy block");
  return match[1]!;
}

let app: App;
let caddy: ChildProcess;
let caddyLog = "";
let ca: string;
let base: string;
let wsUrl: string;
const HOST = "localhost";

beforeAll(async () => {
  app = await startApp();
  const dir = tempDir("pheby-caddy-");
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const site = docsCaddyfile()
    .replace("pheby.example.com", `${HOST}:${httpsPort}`)
    .replace("127.0.0.1:8620", `127.0.0.1:${app.port}`);
  // Test-only global options: keep Caddy on loopback and off the network.
  const global = `{
	admin off
	local_certs
	skip_install_trust
	auto_https disable_redirects
	ocsp_stapling off
	default_bind 127.0.0.1
	http_port ${httpPort}
	https_port ${httpsPort}
}
`;
  const file = join(dir, "Caddyfile");
  writeFileSync(file, global + site);
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    XDG_DATA_HOME: join(dir, "data"),
    XDG_CONFIG_HOME: join(dir, "config"),
  };
  caddy = spawn("caddy", ["run", "--config", file, "--adapter", "caddyfile"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  caddy.on("error", (err) => {
    caddyLog += `spawn failed: ${err.message} (install Debian's caddy: apt-get install caddy)\n`;
  });
  caddy.stdout!.on("data", (d: Buffer) => {
    caddyLog += d.toString();
  });
  caddy.stderr!.on("data", (d: Buffer) => {
    caddyLog += d.toString();
  });
  const root = join(dir, "data", "caddy", "pki", "authorities", "local", "root.crt");
  await waitFor(() => existsSync(root) || caddy.exitCode !== null, 30_000, "Caddy's root CA");
  if (!existsSync(root)) throw new Error(`caddy did not start: ${caddyLog}`);
  ca = readFileSync(root, "utf8");
  base = `https://127.0.0.1:${httpsPort}`;
  wsUrl = `wss://127.0.0.1:${httpsPort}/ws`;
  // Ready once it serves the site's certificate.
  await waitFor(
    async () => (await https("GET", "/health").catch(() => ({ status: 0 }))).status === 200,
    30_000,
    `Caddy to serve (${caddyLog.slice(-500)})`,
  );
});

afterAll(async () => {
  caddy?.kill("SIGKILL");
  await app?.kill();
});

/** HTTPS through Caddy, trusting only its root CA; binds `localAddress` when given. */
function https(
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${base}${path}`,
      {
        method,
        ca,
        servername: HOST,
        headers: { host: HOST, ...opts.headers },
        agent: false,
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

const tls = (localAddress?: string) => ({
  ca,
  servername: HOST,
  headers: { host: HOST },
  ...(localAddress ? { localAddress } : {}),
});

describe("through a real Caddy TLS front", () => {
  it("uses the Caddyfile the docs show, which is the deploy file", () => {
    expect(docsCaddyfile()).toBe(readFileSync(DEPLOY, "utf8"));
  });

  it("wss:// hello and chat, an upload and a Range download over https://", async () => {
    const peer = await Peer.ready(wsUrl, tls());
    const created = await peer.request({ type: "conversation.create", name: "tls" });
    expect(created.type).toBe("conversation.created");
    const conversation = created.type === "conversation.created" ? created.conversation_id : "";
    const finished = peer.upcoming((m) => m.type === "run.finished" && m.conversation_id === conversation);
    const complete = peer.upcoming(
      (m) => m.type === "message.complete" && m.conversation_id === conversation,
    );
    expect(
      (await peer.request({ type: "chat.send", conversation_id: conversation, text: "over TLS" })).type,
    ).toBe("run.accepted");
    expect(await complete).toMatchObject({ text: expect.stringContaining('You said: "over TLS"') });
    expect(await finished).toMatchObject({ status: "completed" });

    const body = "0123456789abcdefghij".repeat(1000);
    const up = await https("POST", `/attachments?conversation_id=${conversation}&filename=tls.txt`, {
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "text/plain" },
      body,
    });
    expect(up.status).toBe(201);
    const { attachment } = JSON.parse(up.body.toString()) as {
      attachment: { attachment_id: string; size: number };
    };
    expect(attachment.size).toBe(body.length);
    const range = await https("GET", `/attachments/${attachment.attachment_id}`, {
      headers: { authorization: `Bearer ${SECRET}`, range: "bytes=10-19" },
    });
    expect(range.status).toBe(206);
    expect(range.headers["content-range"]).toBe(`bytes 10-19/${body.length}`);
    expect(range.body.toString()).toBe("abcdefghij");
    const whole = await https("GET", `/attachments/${attachment.attachment_id}`, {
      headers: { "x-pheby-secret": SECRET },
    });
    expect(whole.body.toString()).toBe(body);
    expect(peer.invalid).toEqual([]);
    peer.close();
  });

  it("locks out the real client address from X-Forwarded-For: two clients through Caddy are independent, spoofing through Caddy does not help", async () => {
    // 127.0.0.2 fails five hellos through Caddy, each time claiming another address in its own X-Forwarded-For.
    for (let i = 0; i < 5; i++) {
      const p = await Peer.open(wsUrl, {
        ...tls("127.0.0.2"),
        headers: { host: HOST, "x-forwarded-for": `198.51.100.${i}` },
      });
      p.send({ type: "hello", secret: "wrong", protocol_version: 1 });
      expect((await p.closed).code).toBe(CLOSE_CODES.unauthorized);
    }
    const locked = await Peer.open(wsUrl, {
      ...tls("127.0.0.2"),
      headers: { host: HOST, "x-forwarded-for": "198.51.100.99" },
    });
    expect((await locked.closed).code).toBe(CLOSE_CODES.lockedOut);
    expect(
      (
        await https("GET", "/attachments/00000000000000000000000000000000", {
          headers: { authorization: `Bearer ${SECRET}` },
          localAddress: "127.0.0.2",
        })
      ).status,
    ).toBe(429);
    // 127.0.0.3 through the same Caddy is unaffected.
    const other = await Peer.ready(wsUrl, tls("127.0.0.3"));
    expect((await other.request({ type: "ping" })).type).toBe("pong");
    other.close();
    expect(app.output()).toContain('"addr":"127.0.0.2"');
  });

  it("a direct (non-proxied) client that sends a spoofed X-Forwarded-For is locked out on its own address", async () => {
    // This needs a peer address that is not loopback: the host's own non-loopback IPv4 address.
    const own = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    if (!own) {
      console.log("[caddy] skipped the direct-spoofing case: this host has no non-loopback IPv4 address");
      return;
    }
    // A second server bound to that address only (not 0.0.0.0), for this case alone.
    const direct = await startApp({ host: own });
    try {
      const url = `ws://${own}:${direct.port}/ws`;
      for (let i = 0; i < 5; i++) {
        const p = await Peer.open(url, {
          localAddress: own,
          headers: { "x-forwarded-for": `203.0.113.${i}` },
        });
        p.send({ type: "hello", secret: "wrong", protocol_version: 1 });
        expect((await p.closed).code).toBe(CLOSE_CODES.unauthorized);
      }
      const locked = await Peer.open(url, {
        localAddress: own,
        headers: { "x-forwarded-for": "203.0.113.200" },
      });
      expect((await locked.closed).code).toBe(CLOSE_CODES.lockedOut);
      expect(direct.output()).toContain(`"addr":"${own}"`);
    } finally {
      await direct.kill();
    }
  });
});
