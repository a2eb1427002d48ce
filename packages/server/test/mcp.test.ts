/**
 * Pheby's MCP server as an agent sees it, over both routes: the MCP SDK's own client either
 * launches the real stdio relay (a child process, as the agent launches it from its `mcpServers`
 * entry), which pipes to the bridge's real Unix socket, or talks Streamable HTTP to the bridge's
 * real listener on 127.0.0.1. Either way the tools run in the bridge against a real scheduler and
 * SQLite. The phone's answers to `ask_user` are scripted.
 */
import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { type IncomingHttpHeaders, request } from "node:http";
import { createConnection } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import type {
  ClarifyAnswer,
  ClarifyQuestion,
  McpServerHttpSpec,
  McpServerStdioSpec,
} from "../src/agent/port.js";
import { Lockout } from "../src/auth/lockout.js";
import { type AgentToolDeps, agentTools, NOT_ACTIVE } from "../src/mcp/agent-tools.js";
import { McpBridge, type McpBridgeGrant, type McpGrant, ToolError } from "../src/mcp/bridge.js";
import { MAX_REQUEST_BYTES } from "../src/mcp/channel.js";
import { MAX_SESSIONS_PER_GRANT } from "../src/mcp/http.js";
import { AGENT_TOOL_NAMES, type AgentToolName } from "../src/mcp/tools.js";
import { Scheduler } from "../src/schedules/scheduler.js";

import { Store } from "../src/store/store.js";
import { MCP_COMMAND, useTempDirs } from "./helpers.js";

const CONV = "a".repeat(32);
const OTHER = "b".repeat(32);
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const LOCKOUT = { maxFailures: 3, windowMs: 60_000, durationMs: 300_000 };

interface Asked {
  conversationId: string;
  question: ClarifyQuestion;
  withdraw: AbortSignal;
  answer(a: ClarifyAnswer): void;
}

type Route = "stdio" | "http";

/** A bridge with a real scheduler and store behind it, and the phone's side of `ask_user` scripted. */
function useRig() {
  const tempDir = useTempDirs();
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });
  return async function rig(
    options: {
      tools?: readonly AgentToolName[];
      conversationOf?: McpGrant["conversationOf"];
      askMs?: number;
    } = {},
  ) {
    const dataDir = tempDir();
    const store = new Store(dataDir);
    for (const id of [CONV, OTHER]) {
      store.createConversation({ id, name: id, session_id: null, source: "t", created_at: Date.now() });
    }
    const scheduler = new Scheduler({
      store: store.schedules,
      clock: { now: () => Date.now() },
      log: silent,
      defaultTimezone: "Europe/Berlin",
      conversationExists: (id) => store.getConversation(id) !== undefined,
      fire: async () => "completed",
    });
    const asked: Asked[] = [];
    const askWaiters: Array<(a: Asked) => void> = [];
    const notified: Array<{ conversationId: string; title: string; body: string }> = [];
    const deps: AgentToolDeps = {
      scheduler,
      askTimeoutMs: options.askMs ?? 60_000,
      // The phone side, as the server's decisions module behaves: withdrawn → cancelled; its
      // expiry passing → cancelled and expired.
      ask: (conversationId, question, withdraw) =>
        new Promise((resolve) => {
          const entry = { conversationId, question, withdraw, answer: resolve };
          withdraw.addEventListener("abort", () => resolve({ outcome: "cancelled" }), { once: true });
          const timer = setTimeout(
            () => resolve({ outcome: "cancelled", expired: true }),
            question.expiresInMs ?? 1e9,
          );
          timer.unref();
          asked.push(entry);
          askWaiters.shift()?.(entry);
        }),
      notify: (conversationId, title, body) => {
        notified.push({ conversationId, title, body });
      },
      sendFile: async (_conversationId, path) => {
        if (!path.startsWith("/allowed/"))
          throw new ToolError("The file is outside the allowed directories.");
        return { filename: path.split("/").pop()! };
      },
    };
    const bridge = await McpBridge.open({
      dataDir,
      tools: options.tools ?? AGENT_TOOL_NAMES,
      command: MCP_COMMAND,
      askTimeoutSeconds: 60,
      timezone: "Europe/Berlin",
      run: agentTools(deps),
      lockout: new Lockout(LOCKOUT, { now: () => Date.now() }),
      log: silent,
    });
    const grant = bridge.grant({
      agent: "test-agent",
      conversationOf: options.conversationOf ?? (async () => CONV),
    });
    const clients: Client[] = [];
    open.push(async () => {
      for (const client of clients) await client.close();
      await bridge.close();
      scheduler.close();
      store.close();
    });
    return {
      dataDir,
      store,
      scheduler,
      bridge,
      grant,
      asked,
      notified,
      /** An MCP client of the agent, over `route` with `grant`'s entry. */
      async connect(route: Route, entry: McpBridgeGrant = grant): Promise<Client> {
        const client = await connect(route === "stdio" ? entry.stdio : entry.http);
        clients.push(client);
        return client;
      },
      nextAsk: () =>
        new Promise<Asked>((resolve) => (asked.length ? resolve(asked.at(-1)!) : askWaiters.push(resolve))),
    };
  };
}

/** Connect the MCP SDK's client exactly as an agent does from its `mcpServers` entry. */
async function connect(entry: McpServerStdioSpec | McpServerHttpSpec): Promise<Client> {
  const client = new Client({ name: "test-agent", version: "1" });
  if ("url" in entry) {
    const headers = Object.fromEntries(entry.headers.map((h) => [h.name, h.value]));
    await client.connect(new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers } }));
  } else {
    const env = Object.fromEntries(entry.env.map((e) => [e.name, e.value]));
    await client.connect(
      new StdioClientTransport({
        command: entry.command,
        args: entry.args,
        env: { PATH: process.env.PATH!, ...env },
      }),
    );
  }
  return client;
}

type ToolReply = { content: Array<{ type: string; text: string }>; isError?: boolean };
const callOf =
  (client: Client) =>
  (name: string, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
    client.callTool(
      { name, arguments: args },
      undefined,
      signal ? { signal } : undefined,
    ) as Promise<ToolReply>;
const textOf = (result: { content: Array<{ text: string }> }) => result.content.map((c) => c.text).join("");
const tokenOf = (grant: McpBridgeGrant) => grant.stdio.env.find((e) => e.name === "PHEBY_MCP_TOKEN")!.value;

describe.each(["stdio", "http"] as const)("Pheby's MCP server over %s", (route) => {
  const rig = useRig();
  async function setup(options: Parameters<typeof rig>[0] = {}) {
    const p = await rig(options);
    const client = await p.connect(route);
    return { ...p, client, call: callOf(client) };
  }

  it("lists its tools with real JSON Schemas for their arguments", async () => {
    const p = await setup();
    const { tools } = await p.client.listTools();
    expect(tools.map((t) => t.name)).toEqual([...AGENT_TOOL_NAMES]);
    const ask = tools.find((t) => t.name === "ask_user")!;
    expect(ask.inputSchema).toMatchObject({
      type: "object",
      properties: { question: { type: "string" }, choices: { type: "array", items: { type: "string" } } },
      required: ["question"],
    });
    expect(ask.description).toContain("within 60 seconds");
    expect(tools.find((t) => t.name === "schedule_create")!.description).toContain("default Europe/Berlin");
  });

  it("offers only the configured tools, and refuses the others when called anyway", async () => {
    const p = await setup({ tools: ["ask_user", "notify_user"] });
    expect((await p.client.listTools()).tools.map((t) => t.name)).toEqual(["ask_user", "notify_user"]);
    const refused = await p.call("schedule_list");
    expect(refused).toMatchObject({ isError: true });
    expect(textOf(refused)).toMatch(/Tool schedule_list not found/);
    expect(p.scheduler.list(CONV)).toEqual([]);
  });

  it("schedule_create / _list / _delete act in the caller's conversation, with the scheduler's rules", async () => {
    const p = await setup();
    const created = await p.call("schedule_create", {
      prompt: "Summarise my inbox",
      cron: "0 8 * * 1-5",
      name: "Inbox",
    });
    expect(created.isError).toBeFalsy();
    const answer = JSON.parse(textOf(created));
    // The agent's schedule waits for the user, and the agent is told so.
    expect(answer).toMatchObject({ active: false, note: NOT_ACTIVE });
    const schedule = answer.schedule;
    expect(schedule).toMatchObject({
      conversation_id: CONV,
      name: "Inbox",
      cron: "0 8 * * 1-5",
      timezone: "Europe/Berlin",
      enabled: false,
      next_run_at: null,
      created_by: "agent",
      confirmed: false,
      auto_approve: false,
    });
    expect(p.scheduler.list(CONV).map((r) => r.id)).toEqual([schedule.schedule_id]);
    const bad = await p.call("schedule_create", { prompt: "p", cron: "61 * * * *" });
    expect(bad).toMatchObject({ isError: true });
    expect(textOf(bad)).toBe("cron is not a valid expression (Invalid value for minute)");
    const neither = await p.call("schedule_create", { prompt: "p" });
    expect(textOf(neither)).toBe("A schedule needs cron (repeating) or at (once)");
    expect(JSON.parse(textOf(await p.call("schedule_list")))).toEqual([schedule]);
    // Another conversation's schedule is invisible from here.
    const theirs = p.scheduler.create({ conversationId: OTHER, prompt: "p", cron: "0 9 * * *" });
    const refused = await p.call("schedule_delete", { schedule_id: theirs.id });
    expect(textOf(refused)).toBe("No such schedule in this conversation.");
    expect(p.scheduler.list(OTHER)).toHaveLength(1);
    // The user's schedule in this conversation is not the agent's to delete.
    const users = p.scheduler.create({ conversationId: CONV, prompt: "mine", cron: "0 9 * * *" });
    const notYours = await p.call("schedule_delete", { schedule_id: users.id });
    expect(notYours).toMatchObject({ isError: true });
    expect(textOf(notYours)).toBe(
      "This schedule was made by the user: only the user can delete it, in Pheby.",
    );
    expect(p.scheduler.list(CONV).map((r) => r.id)).toEqual([schedule.schedule_id, users.id]);
    p.scheduler.delete(users.id);
    const deleted = await p.call("schedule_delete", { schedule_id: schedule.schedule_id });
    expect(JSON.parse(textOf(deleted)).deleted.schedule_id).toBe(schedule.schedule_id);
    expect(p.scheduler.list(CONV)).toEqual([]);
  });

  it("ask_user asks in the conversation and returns the answer", async () => {
    const p = await setup();
    const result = p.call("ask_user", { question: "Deploy where?", choices: ["staging", "production"] });
    const asked = await p.nextAsk();
    expect(asked.conversationId).toBe(CONV);
    expect(asked.question).toEqual({
      question: "Deploy where?",
      choices: ["staging", "production"],
      allowFreeText: true,
      expiresInMs: 60_000,
    });
    asked.answer({ outcome: "answered", response: "production" });
    expect(JSON.parse(textOf(await result))).toEqual({ answered: true, answer: "production" });
  });

  it("ask_user gives a clear no-answer when the question expires", async () => {
    const p = await setup({ askMs: 200 });
    const result = await p.call("ask_user", { question: "Anyone there?" });
    expect(JSON.parse(textOf(result))).toEqual({ answered: false, reason: "No answer within 0 seconds." });
  });

  it("ask_user's question is withdrawn when the agent cancels the tool call", async () => {
    const p = await setup();
    const controller = new AbortController();
    const result = p
      .call("ask_user", { question: "Wait for me?" }, controller.signal)
      .catch((err: Error) => err);
    const asked = await p.nextAsk();
    controller.abort();
    await expect.poll(() => asked.withdraw.aborted).toBe(true);
    expect(await result).toBeInstanceOf(Error);
  });

  it("ask_user's question is withdrawn when the agent process is gone (its grant revoked)", async () => {
    const p = await setup();
    const result = p.call("ask_user", { question: "Still there?" }).catch((err: Error) => err);
    const asked = await p.nextAsk();
    p.grant.revoke();
    await expect.poll(() => asked.withdraw.aborted).toBe(true);
    // The relay exits with its connection; an HTTP client (of a process that is gone) just stops hearing.
    if (route === "stdio") expect(await result).toBeInstanceOf(Error);
  });

  it("notify_user and send_file reach the run engine's side; refusals are the agent's error text", async () => {
    const p = await setup();
    expect(
      JSON.parse(textOf(await p.call("notify_user", { title: "Done", body: "The build passed." }))),
    ).toEqual({ sent: true });
    expect(p.notified).toEqual([{ conversationId: CONV, title: "Done", body: "The build passed." }]);
    expect(JSON.parse(textOf(await p.call("send_file", { path: "/allowed/report.pdf" })))).toEqual({
      delivered: true,
      filename: "report.pdf",
    });
    const refused = await p.call("send_file", { path: "/etc/passwd" });
    expect(refused).toMatchObject({ isError: true });
    expect(textOf(refused)).toBe("The file is outside the allowed directories.");
  });

  it("says so when the call belongs to no conversation", async () => {
    const p = await setup({ conversationOf: async () => null });
    const result = await p.call("schedule_list");
    expect(result).toMatchObject({ isError: true });
    expect(textOf(result)).toMatch(/^Pheby cannot tell which conversation this call belongs to/);
  });

  it("checks the arguments inside Pheby, naming the field", async () => {
    const p = await setup();
    const result = await p.call("ask_user", { question: "", choices: "secret-value" });
    expect(result).toMatchObject({ isError: true });
    expect(textOf(result)).toMatch(/Input validation error/);
    expect(textOf(result)).toContain("question");
    expect(p.asked).toEqual([]);
  });

  it("two agent processes' clients at once each act with their own grant", async () => {
    const p = await setup();
    const second = p.bridge.grant({ agent: "other", conversationOf: async () => OTHER });
    const other = callOf(await p.connect(route, second));
    await p.call("notify_user", { title: "one", body: "1" });
    await other("notify_user", { title: "two", body: "2" });
    expect(p.notified.map((n) => [n.conversationId, n.title])).toEqual([
      [CONV, "one"],
      [OTHER, "two"],
    ]);
  });
});

describe("the stdio route: the relay and the socket", () => {
  const rig = useRig();

  it("hands a relay only the socket and a token; the socket is Pheby's user's alone", async () => {
    const p = await rig();
    expect(statSync(p.bridge.socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(`${p.dataDir}/mcp`).mode & 0o777).toBe(0o700);
    const token = tokenOf(p.grant);
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    // No shared secret, no settings: the relay knows nothing but where Pheby is and who it is.
    expect(p.grant.stdio.env).toEqual([
      { name: "PHEBY_MCP_SOCKET", value: p.bridge.socketPath },
      { name: "PHEBY_MCP_TOKEN", value: token },
    ]);
    expect(p.grant.stdio.args).toEqual(MCP_COMMAND.slice(1));
  });

  it("refuses a wrong token, and locks the socket out after repeated failures", async () => {
    const p = await rig();
    for (let i = 0; i < LOCKOUT.maxFailures; i++) {
      expect(await hello(p.bridge.socketPath, "0".repeat(64))).toBe("error Not authorized.");
    }
    expect(await hello(p.bridge.socketPath, tokenOf(p.grant))).toBe(
      "error Too many failed attempts; retry after 300 s",
    );
  });

  it("accepts the right token (a missing one is refused without counting), and a bounded hello", async () => {
    const p = await rig();
    for (let i = 0; i < LOCKOUT.maxFailures + 1; i++) {
      expect(await hello(p.bridge.socketPath, "")).toBe("error Not authorized.");
    }
    expect(await hello(p.bridge.socketPath, tokenOf(p.grant))).toBe("ok");
    expect(await hello(p.bridge.socketPath, "x".repeat(300), false)).toBe("error The hello is too large.");
  });

  it("reads an MCP message of the limit, and closes a connection that sends one byte more", async () => {
    const p = await rig();
    const conn = await relayConnection(p.bridge.socketPath, tokenOf(p.grant));
    const init = await conn.request({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    expect(init).toMatchObject({ id: 1, result: { serverInfo: { name: "pheby" } } });
    const padded = (bytes: number, id: number) => {
      const json = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list", params: {} });
      return `${json.slice(0, -1)}${" ".repeat(bytes - json.length - 1)}}\n`; // `bytes` with the newline
    };
    const listed = await conn.request(padded(MAX_REQUEST_BYTES, 2));
    expect(listed).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
    conn.write(padded(MAX_REQUEST_BYTES + 1, 3));
    await conn.closed;
  });

  it("a relay with a wrong token says so and exits", async () => {
    const p = await rig();
    const env = {
      ...Object.fromEntries(p.grant.stdio.env.map((e) => [e.name, e.value])),
      PHEBY_MCP_TOKEN: "f".repeat(64),
    };
    expect(await runRelay(p.grant.stdio, env)).toEqual({ code: 2, stderr: "pheby-mcp: Not authorized.\n" });
  });

  it("an unreachable Pheby: a connected client's call fails instead of hanging, a new relay says why", async () => {
    const p = await rig();
    const call = callOf(await p.connect("stdio"));
    await p.bridge.close();
    await expect(call("schedule_list")).rejects.toThrow(/closed/i);
    const env = Object.fromEntries(p.grant.stdio.env.map((e) => [e.name, e.value]));
    expect(await runRelay(p.grant.stdio, env)).toEqual({
      code: 1,
      stderr: "pheby-mcp: Pheby is not reachable (ENOENT)\n",
    });
  });
});

describe("the HTTP route: the listener on 127.0.0.1", () => {
  const rig = useRig();
  const authorization = (p: { grant: McpBridgeGrant }) => p.grant.http.headers[0]!.value;
  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" };

  it("hands an HTTP agent a loopback URL with its token as a Bearer header", async () => {
    const p = await rig();
    expect(p.grant.http).toEqual({
      type: "http",
      name: "pheby",
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/),
      headers: [{ name: "Authorization", value: `Bearer ${tokenOf(p.grant)}` }],
    });
  });

  it("refuses a wrong or missing token (401), any Origin (403), another Host (421), another path (404)", async () => {
    const p = await rig();
    const url = p.grant.http.url;
    const post = (headers: Record<string, string>) =>
      raw(url, { method: "POST", headers: { ...mcpHeaders, ...headers }, body: initialize });
    expect((await post({ authorization: `Bearer ${"0".repeat(64)}` })).status).toBe(401);
    expect((await post({})).status).toBe(401);
    // With the right token: still refused.
    const right = { authorization: authorization(p) };
    expect((await post({ ...right, origin: "http://127.0.0.1" })).status).toBe(403);
    expect((await post({ ...right, origin: "null" })).status).toBe(403);
    const port = new URL(url).port;
    for (const host of [`localhost:${port}`, "evil.example", `127.0.0.1:${Number(port) + 1}`]) {
      expect((await post({ ...right, host })).status).toBe(421);
    }
    expect(
      (
        await raw(url.replace("/mcp", "/other"), {
          method: "POST",
          headers: { ...mcpHeaders, ...right },
          body: initialize,
        })
      ).status,
    ).toBe(404);
    const ok = await post(right);
    expect(ok.status).toBe(200);
    expect(ok.headers["mcp-session-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("locks the source out after repeated wrong tokens: then even the right one gets 429", async () => {
    const p = await rig();
    const post = (token: string) =>
      raw(p.grant.http.url, {
        method: "POST",
        headers: { ...mcpHeaders, authorization: `Bearer ${token}` },
        body: initialize,
      });
    // Refusals before the token (Origin, Host) are not guesses: they do not count.
    await raw(p.grant.http.url, {
      method: "POST",
      headers: { ...mcpHeaders, origin: "http://x" },
      body: initialize,
    });
    for (let i = 0; i < LOCKOUT.maxFailures - 1; i++) expect((await post("1".repeat(64))).status).toBe(401);
    expect((await post(tokenOf(p.grant))).status).toBe(200); // a success forgets earlier failures
    for (let i = 0; i < LOCKOUT.maxFailures; i++) expect((await post("1".repeat(64))).status).toBe(401);
    const locked = await post(tokenOf(p.grant));
    expect(locked.status).toBe(429);
    expect(locked.headers["retry-after"]).toBe("300");
    expect(locked.body).toBe("Too many failed attempts; retry after 300 s");
  });

  it("a session belongs to its grant; revoking the grant closes its sessions and refuses its token", async () => {
    const p = await rig();
    const open = await raw(p.grant.http.url, {
      method: "POST",
      headers: { ...mcpHeaders, authorization: authorization(p) },
      body: initialize,
    });
    const sessionId = open.headers["mcp-session-id"] as string;
    expect(p.bridge.http.sessions).toBe(1);
    const other = p.bridge.grant({ conversationOf: async () => OTHER });
    const list = (auth: string) =>
      raw(p.grant.http.url, {
        method: "POST",
        headers: {
          ...mcpHeaders,
          authorization: auth,
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
      });
    expect((await list(other.http.headers[0]!.value)).status).toBe(404);
    expect((await list(authorization(p))).status).toBe(200);
    p.grant.revoke();
    expect(p.bridge.http.sessions).toBe(0);
    expect((await list(authorization(p))).status).toBe(401);
  });

  it(`keeps ${MAX_SESSIONS_PER_GRANT} MCP sessions per agent process; one more closes the least recently used`, async () => {
    const p = await rig();
    const headers = { ...mcpHeaders, authorization: authorization(p) };
    const open = async () =>
      (await raw(p.grant.http.url, { method: "POST", headers, body: initialize })).headers[
        "mcp-session-id"
      ] as string;
    const list = (sessionId: string) =>
      raw(p.grant.http.url, {
        method: "POST",
        headers: { ...headers, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }),
      });
    const ids: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_GRANT; i++) ids.push(await open());
    expect(p.bridge.http.sessions).toBe(MAX_SESSIONS_PER_GRANT);
    expect((await list(ids[0]!)).status).toBe(200); // used: now the second is the least recent
    const other = p.bridge.grant({ conversationOf: async () => OTHER }); // another grant's sessions are not counted
    await raw(p.grant.http.url, {
      method: "POST",
      headers: { ...mcpHeaders, authorization: other.http.headers[0]!.value },
      body: initialize,
    });
    expect((await list(ids[1]!)).status).toBe(200);
    ids.push(await open());
    expect(p.bridge.http.sessions).toBe(MAX_SESSIONS_PER_GRANT + 1);
    expect((await list(ids[2]!)).status).toBe(404);
    expect((await list(ids[0]!)).status).toBe(200);
    expect((await list(ids.at(-1)!)).status).toBe(200);
  }, 120_000);

  it("reads a body of the limit, refuses one byte more (413)", async () => {
    const p = await rig();
    const padded = (bytes: number) => `${initialize.slice(0, -1)}${" ".repeat(bytes - initialize.length)}}`;
    const post = (body: string) =>
      raw(p.grant.http.url, {
        method: "POST",
        headers: { ...mcpHeaders, authorization: authorization(p) },
        body,
      });
    expect((await post(padded(MAX_REQUEST_BYTES))).status).toBe(200);
    expect((await post(padded(MAX_REQUEST_BYTES + 1))).status).toBe(413);
  });
});

/** Present `token` on the socket; Pheby's answer line. */
async function hello(socketPath: string, token: string, newline = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let data = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(newline ? `${token}\n` : token));
    socket.on("data", (chunk: string) => {
      data += chunk;
      const nl = data.indexOf("\n");
      if (nl >= 0) {
        socket.destroy();
        resolve(data.slice(0, nl));
      }
    });
    socket.on("error", reject);
  });
}

/** A relay's connection, by hand: the hello, then raw JSON-RPC lines. */
async function relayConnection(socketPath: string, token: string) {
  const socket = createConnection(socketPath);
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  let data = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    data += chunk;
    for (let nl = data.indexOf("\n"); nl >= 0; nl = data.indexOf("\n")) {
      const line = data.slice(0, nl);
      data = data.slice(nl + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  const next = () =>
    new Promise<string>((resolve) => (lines.length ? resolve(lines.shift()!) : waiters.push(resolve)));
  socket.write(`${token}\n`);
  expect(await next()).toBe("ok");
  return {
    closed,
    write: (line: string) => socket.write(line),
    async request(message: object | string): Promise<unknown> {
      socket.write(typeof message === "string" ? message : `${JSON.stringify(message)}\n`);
      return JSON.parse(await next());
    },
  };
}

/** Start the relay of `entry` with `env`; how it ended. */
function runRelay(
  entry: McpServerStdioSpec,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(entry.command, entry.args, { env: { PATH: process.env.PATH!, ...env } });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

/** One HTTP request with full control of its headers (`Host` among them). */
function raw(
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method, headers: init.headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}
