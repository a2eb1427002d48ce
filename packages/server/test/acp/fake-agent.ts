/**
 * A scripted ACP agent for the backend's port-level tests, written with the SDK's
 * agent side and run as a real child process (`node --import tsx fake-agent.ts`).
 *
 * Behaviour is scripted per prompt (the first word of the prompt text, see `SCRIPTS`)
 * and per process through environment variables:
 * - `FAKE_STATE`: JSON file holding sessions, so a respawned agent can resume/load them.
 * - `FAKE_LOG`: JSON-lines file of every request/notification received (tests assert on it).
 * - `FAKE_MODELS`: `config` (config options, default), `legacy` (`models` + `session/set_model`), `none`,
 *   or `opencode` (like OpenCode 1.18: the effort option exists only for the reasoning model `thinker`,
 *   its values change with the model, a value it lacks is refused, and every change is also
 *   announced in a `config_option_update` before the response).
 * - `FAKE_LINGER`: keep running after stdin closes (a native agent behind a launcher shim).
 * - `FAKE_CAPS`: JSON merged over the advertised agent capabilities (`{"mcpCapabilities":{"http":true}}`:
 *   Pheby hands it its HTTP MCP server instead of the stdio relay).
 * - `FAKE_MCP_SHARED`: one MCP client for the whole process (as Hermes), not one per session (as Codex).
 * - `FAKE_HANG`: a method name this agent never answers (with `FAKE_HANG_WHILE`: while that file exists).
 * - `FAKE_EXIT_AT_START`: exit before reading anything.
 * - `FAKE_REFUSE`: a file path; while that file exists the agent exits at start (an agent that
 *   cannot start for a while, then can again).
 * - `FAKE_AMNESIA`: start knowing no session of earlier processes (an agent that keeps its sessions
 *   in memory only): `session/load`, `session/resume` and `session/prompt` of an old ID answer
 *   "session not found".
 * - `FAKE_BANNER`: a line of text printed on stdout before the connection starts (garbage).
 * - `FAKE_NAME`: the `agentInfo.name` it reports (`hermes-agent` to be taken for Hermes).
 * - `FAKE_MODELS=hermes`: Hermes 0.19's legacy models (`provider:model` IDs).
 * - `FAKE_MODES`: `claude` (session modes `default`, `plan`, `acceptEdits`, `bypassPermissions` and
 *   `locked`, which it refuses to enter, naming its cwd), `config` (no session modes: a config option
 *   of category `mode` with `default`, `plan`, `yolo`), `names` (session modes `default`, `auto`,
 *   `dont_ask`, `dontAsk`, `accept_edits`: IDs different agents mean different things by), or unset
 *   (session modes `default`, `auto`, `yolo`).
 * - `FAKE_COMMANDS`: announce slash commands (`available_commands_update`) shortly after `session/new`.
 * Started with `sessions delete -y <id>` it deletes that session from its state and exits, as
 * `hermes sessions delete` does.
 *
 * Every line of `FAKE_LOG` carries the agent's `pid`, so a test can kill it mid-run.
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";

interface Session {
  cwd: string;
  title: string | null;
  history: Array<{ role: "user" | "assistant"; text: string }>;
  model: string;
  effort: string;
  mode: string;
}

const statePath = process.env.FAKE_STATE!;
const sessions: Record<string, Session> =
  existsSync(statePath) && !process.env.FAKE_AMNESIA ? JSON.parse(readFileSync(statePath, "utf8")) : {};
const save = () => writeFileSync(statePath, JSON.stringify(sessions));
const log = (method: string, params: unknown) =>
  process.env.FAKE_LOG &&
  appendFileSync(process.env.FAKE_LOG, `${JSON.stringify({ method, params, pid: process.pid })}\n`);
if (process.env.FAKE_EXIT_AT_START || (process.env.FAKE_REFUSE && existsSync(process.env.FAKE_REFUSE))) {
  log("exit-at-start", {});
  process.exit(7);
}
if (process.env.FAKE_BANNER) process.stdout.write(`${process.env.FAKE_BANNER}\n`);
const modelsKind = process.env.FAKE_MODELS ?? "config";
/** The method this agent never answers (while the `FAKE_HANG_WHILE` file exists, when that is set). */
const hangs = (method: string) =>
  process.env.FAKE_HANG === method &&
  (!process.env.FAKE_HANG_WHILE || existsSync(process.env.FAKE_HANG_WHILE));
const never = new Promise<never>(() => {});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cancels = new Map<string, AbortController>();
let nextId = Object.keys(sessions).length + 1;

// `<agent> … sessions delete -y <id>`: Hermes's CLI way of deleting a session (same state file).
const cli = process.argv.indexOf("sessions");
if (cli >= 0 && process.argv[cli + 1] === "delete") {
  const id = process.argv.at(-1)!;
  log("cli sessions delete", { sessionId: id });
  if (!sessions[id]) {
    process.stderr.write(`Session '${id}' not found.\n`);
    process.exit(1);
  }
  delete sessions[id];
  save();
  process.exit(0);
}

process.stderr.write("fake agent started\n");

const modesKind = process.env.FAKE_MODES ?? "session";
const MODE_IDS: Record<string, string[]> = {
  session: ["default", "auto", "yolo"],
  claude: ["default", "plan", "acceptEdits", "bypassPermissions", "locked"],
  config: ["default", "plan", "yolo"],
  names: ["default", "auto", "dont_ask", "dontAsk", "accept_edits"],
};
/** The config option of category `mode` (`FAKE_MODES=config`). */
function modeOptionOf(s: Session): acp.SessionConfigOption {
  return {
    id: "mode",
    name: "Mode",
    category: "mode",
    type: "select",
    currentValue: s.mode,
    options: MODE_IDS.config!.map((v) => ({ value: v, name: v.toUpperCase(), description: `The ${v} mode` })),
  };
}

function settingsOf(s: Session) {
  const full = settingsWithoutModeOption(s);
  if (modesKind !== "config") return full;
  const { modes: _none, ...rest } = full;
  return {
    ...rest,
    configOptions: [
      ...((rest as { configOptions?: acp.SessionConfigOption[] }).configOptions ?? []),
      modeOptionOf(s),
    ],
  };
}

function settingsWithoutModeOption(s: Session) {
  const modes = {
    currentModeId: s.mode,
    availableModes: (MODE_IDS[modesKind] ?? MODE_IDS.session!).map((id) => ({
      id,
      name: id,
      ...(modesKind === "claude" ? { description: `${id} mode` } : {}),
    })),
  };
  if (modelsKind === "legacy") {
    return {
      modes,
      models: {
        availableModels: [
          { modelId: "m-one", name: "One" },
          { modelId: "m-two", name: "Two" },
        ],
        currentModelId: s.model,
      },
    };
  }
  if (modelsKind === "hermes") {
    // Hermes 0.19: `provider:model` IDs, the provider's label in each description.
    return {
      modes,
      models: {
        availableModels: [
          {
            modelId: "custom:fake-model",
            name: "fake-model",
            description: "Provider: Custom endpoint • current",
          },
          {
            modelId: "openrouter:qwen/qwen3:free",
            name: "qwen/qwen3:free",
            description: "Provider: OpenRouter",
          },
          { modelId: "openrouter:anthropic/claude-sonnet-4", name: "anthropic/claude-sonnet-4" },
        ],
        currentModelId: s.model,
      },
    };
  }
  if (modelsKind === "none") return { modes };
  if (modelsKind === "opencode") return { modes, configOptions: openCodeOptions(s) };
  const configOptions: acp.SessionConfigOption[] = [
    {
      id: "model",
      name: "Model",
      category: "model",
      type: "select",
      currentValue: s.model,
      options: [
        {
          group: "cloud",
          name: "Cloud",
          options: [
            { value: "big", name: "Big" },
            { value: "small", name: "Small" },
          ],
        },
        { group: "local", name: "Local", options: [{ value: "tiny", name: "Tiny" }] },
      ],
    },
    {
      id: "reasoning",
      name: "Thinking",
      category: "thought_level",
      type: "select",
      currentValue: s.effort,
      options: ["off", "low", "medium", "high"].map((v) => ({ value: v, name: v })),
    },
  ];
  return { modes, configOptions };
}

/** OpenCode's options: a reasoning effort only while the model has one. */
function openCodeOptions(s: Session): acp.SessionConfigOption[] {
  const options: acp.SessionConfigOption[] = [
    {
      id: "model",
      name: "Model",
      category: "model",
      type: "select",
      currentValue: s.model,
      options: [
        { value: "fast", name: "Fake/Fast" },
        { value: "thinker", name: "Fake/Thinker" },
      ],
    },
  ];
  if (s.model === "thinker") {
    options.push({
      id: "effort",
      name: "Effort",
      category: "thought_level",
      type: "select",
      currentValue: s.effort,
      options: ["low", "medium", "high", "default"].map((v) => ({ value: v, name: v })),
    });
  }
  return options;
}

/** The `mcpServers` each session was opened with (`new:<n>` until session/new assigns the ID). */
const mcpServersOf = new Map<string, acp.McpServer[]>();

function newSession(cwd: string): string {
  const pending = mcpServersOf.get(`new:${nextId}`);
  const id = `sess-${process.pid}-${nextId++}`;
  if (pending) mcpServersOf.set(id, pending);
  sessions[id] = {
    cwd,
    title: null,
    history: [],
    model:
      modelsKind === "legacy"
        ? "m-one"
        : modelsKind === "opencode"
          ? "fast"
          : modelsKind === "hermes"
            ? "custom:fake-model"
            : "small",
    effort: modelsKind === "opencode" ? "default" : "medium",
    mode: modesKind === "session" ? "auto" : "default",
  };
  save();
  return id;
}

function known(id: string): Session {
  const s = sessions[id];
  if (!s) throw acp.RequestError.sessionNotFound(id);
  return s;
}

/** How Pheby's context block for a replacement session starts (docs/agents.md). */
const CONTEXT_TAG = "<conversation_so_far";

const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const app = acp
  .agent({ name: "fake-agent" })
  .onRequest("initialize", ({ params }) => {
    log("initialize", params);
    const caps: acp.AgentCapabilities = {
      loadSession: true,
      promptCapabilities: { image: true, embeddedContext: true },
      sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} },
      ...JSON.parse(process.env.FAKE_CAPS ?? "{}"),
    };
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: caps,
      agentInfo: { name: process.env.FAKE_NAME ?? "fake", version: "1" },
    };
  })
  .onRequest("session/new", async ({ params, client }) => {
    log("session/new", params);
    if (hangs("session/new")) await never;
    mcpServersOf.set(`new:${nextId}`, params.mcpServers);
    const sessionId = newSession(params.cwd);
    if (process.env.FAKE_COMMANDS) {
      // As Claude Code does: the commands come right after the session, outside any turn.
      setTimeout(() => {
        void client.notify("session/update", {
          sessionId,
          update: {
            sessionUpdate: "available_commands_update",
            availableCommands: [
              { name: "compact", description: "Compact the conversation" },
              { name: "review", description: "Review a pull request", input: { hint: "PR number" } },
            ],
          },
        });
      }, 200);
    }
    return { sessionId, ...settingsOf(sessions[sessionId]!) };
  })
  .onRequest("session/list", ({ params }) => {
    log("session/list", params);
    const all = Object.entries(sessions).filter(([, s]) => !params.cwd || s.cwd === params.cwd);
    // Two pages, to exercise the cursor.
    const start = params.cursor ? Number(params.cursor) : 0;
    const page = all.slice(start, start + 2);
    const next = start + 2 < all.length ? String(start + 2) : null;
    return {
      sessions: page.map(([sessionId, s]) => ({
        sessionId,
        cwd: s.cwd,
        title: s.title,
        updatedAt: "2026-01-01T00:00:00Z",
      })),
      nextCursor: next,
    };
  })
  .onRequest("session/load", async ({ params, client }) => {
    log("session/load", params);
    mcpServersOf.set(params.sessionId, params.mcpServers);
    if (hangs("session/load")) await never;
    const s = known(params.sessionId);
    for (const [i, h] of s.history.entries()) {
      const sessionUpdate = h.role === "user" ? "user_message_chunk" : "agent_message_chunk";
      // Split each message in two chunks sharing a messageId.
      const half = Math.ceil(h.text.length / 2);
      for (const text of [h.text.slice(0, half), h.text.slice(half)]) {
        await client.notify("session/update", {
          sessionId: params.sessionId,
          update: { sessionUpdate, content: { type: "text", text }, messageId: `m${i}` },
        });
      }
    }
    return settingsOf(s);
  })
  .onRequest("session/resume", ({ params }) => {
    log("session/resume", params);
    mcpServersOf.set(params.sessionId, params.mcpServers ?? []);
    return settingsOf(known(params.sessionId));
  })
  .onRequest("session/close", ({ params }) => {
    log("session/close", params);
    return {};
  })
  .onRequest("session/delete", ({ params }) => {
    log("session/delete", params);
    delete sessions[params.sessionId];
    save();
    return {};
  })
  .onRequest("session/set_mode", ({ params }) => {
    log("session/set_mode", params);
    const s = known(params.sessionId);
    if (params.modeId === "locked")
      throw acp.RequestError.invalidParams({}, `mode locked by the policy in ${s.cwd}/policy.json`);
    s.mode = params.modeId;
    save();
    return {};
  })
  .onRequest("session/set_config_option", async ({ params, client }) => {
    log("session/set_config_option", params);
    const s = known(params.sessionId);
    const value = String(params.value);
    if (modelsKind === "opencode") {
      if (params.configId === "model") {
        s.model = value;
        s.effort = value === "thinker" ? "low" : "default";
      } else if (params.configId === "effort" && s.model === "thinker" && value !== "bogus") s.effort = value;
      else throw acp.RequestError.invalidParams({ effort: value }, `effort not found: ${value}`);
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "config_option_update", configOptions: openCodeOptions(s) },
      });
    } else if (params.configId === "model") s.model = value;
    else if (params.configId === "mode" && modesKind === "config") s.mode = value;
    else if (params.configId === "reasoning") s.effort = value;
    else throw acp.RequestError.invalidParams(params.configId);
    save();
    return { configOptions: settingsOf(s).configOptions ?? [] };
  })
  .onRequest(
    "session/set_model",
    (raw) => raw as { sessionId: string; modelId: string },
    ({ params }) => {
      log("session/set_model", params);
      known(params.sessionId).model = params.modelId;
      save();
      return {};
    },
  )
  .onNotification("session/cancel", ({ params }) => {
    log("session/cancel", params);
    cancels.get(params.sessionId)?.abort();
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    log("session/prompt", params);
    const s = known(params.sessionId);
    // The conversation so far, which Pheby gives a new session that replaces a lost one, comes
    // first; the script is chosen by the user's own text after it.
    const first = params.prompt.find((b) => b.type !== "text" || !b.text.startsWith(CONTEXT_TAG));
    const text = first?.type === "text" ? first.text : "";
    const [word = "", ...args] = text.trim().split(/\s+/);
    const cancel = new AbortController();
    cancels.set(params.sessionId, cancel);
    const say = (t: string) =>
      client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
      });
    const update = (u: acp.SessionUpdate) =>
      client.notify("session/update", { sessionId: params.sessionId, update: u });
    s.history.push({ role: "user", text });
    let reply = "";
    const sayAndKeep = async (t: string) => {
      reply += t;
      await say(t);
    };
    const script = SCRIPTS[word] ?? SCRIPTS.echo!;
    try {
      return await script({ s, args, text, params, client, cancel: cancel.signal, say: sayAndKeep, update });
    } finally {
      s.history.push({ role: "assistant", text: reply });
      save();
      cancels.delete(params.sessionId);
    }
  });

interface Ctx {
  s: Session;
  args: string[];
  text: string;
  params: acp.PromptRequest;
  client: acp.AgentContext;
  cancel: AbortSignal;
  say(t: string): Promise<void>;
  update(u: acp.SessionUpdate): Promise<void>;
}
type Script = (c: Ctx) => Promise<acp.PromptResponse>;
const done = (stopReason: acp.StopReason = "end_turn") => ({ stopReason });

const HERMES_OPTIONS: acp.PermissionOption[] = [
  { optionId: "allow_once", kind: "allow_once", name: "Allow once" },
  { optionId: "allow_session", kind: "allow_always", name: "Allow for session" },
  { optionId: "allow_always", kind: "allow_always", name: "Allow always" },
  { optionId: "deny", kind: "reject_once", name: "Deny" },
  { optionId: "deny_always", kind: "reject_always", name: "Deny always" },
];
/** Gemini CLI 0.61's options for a shell command (ids are its ToolConfirmationOutcome values). */
const GEMINI_OPTIONS: acp.PermissionOption[] = [
  { optionId: "proceed_once", kind: "allow_once", name: "Allow" },
  { optionId: "proceed_always", kind: "allow_always", name: "Allow for this session" },
  {
    optionId: "proceed_always_and_save",
    kind: "allow_always",
    name: "Allow this command for all future sessions",
  },
  { optionId: "cancel", kind: "reject_once", name: "Reject" },
];
/** Only a permanent allow and a permanent reject. */
const ALWAYS_ONLY_OPTIONS: acp.PermissionOption[] = [
  { optionId: "yes_forever", kind: "allow_always", name: "Always allow" },
  { optionId: "no_forever", kind: "reject_always", name: "Never allow" },
];
const GENERIC_OPTIONS: acp.PermissionOption[] = [
  { optionId: "proceed_once", kind: "allow_once", name: "Yes" },
  { optionId: "proceed_always", kind: "allow_always", name: "Always" },
  { optionId: "cancel", kind: "reject_once", name: "No" },
];

/**
 * The MCP client of a session's MCP server, as agents have one (the MCP SDK's, as Qwen Code's and
 * Gemini CLI's): it launches a stdio server, or talks Streamable HTTP to an `http` one with the
 * entry's headers. One per session, as Codex does; `FAKE_MCP_SHARED` shares the first one across
 * the process, as Hermes does.
 */
async function mcpClient(server: acp.McpServer): Promise<Client> {
  // Loaded on first use: most scripts never call MCP, and the SDK slows every agent's start.
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const client = new Client({ name: "fake-agent", version: "1" });
  if ("url" in server) {
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const headers = Object.fromEntries(server.headers.map((h) => [h.name, h.value]));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }),
    );
  } else {
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const env = {
      PATH: process.env.PATH ?? "",
      ...Object.fromEntries(server.env.map((e) => [e.name, e.value])),
    };
    await client.connect(new StdioClientTransport({ command: server.command, args: server.args, env }));
  }
  return client;
}
const mcpClients = new Map<string, Promise<Client>>();
const SHARED = "shared";

/** One step of the `replay` script. */
type ReplayStep =
  | { update: acp.SessionUpdate }
  | { permission: acp.ToolCallUpdate }
  | { write: { path: string; text: string } }
  | { say: string };

const SCRIPTS: Record<string, Script> = {
  /**
   * `replay <file>`: the steps of a JSON file, in order: `{ update }` is sent as a session update,
   * `{ permission }` asked as `session/request_permission` about that tool call (Hermes's options;
   * the outcome is said as text), `{ write }` writes a file (an edit applied), `{ say }` says text.
   */
  async replay({ args, update, client, params, say }) {
    const steps = JSON.parse(readFileSync(args[0]!, "utf8")) as ReplayStep[];
    for (const step of steps) {
      if ("update" in step) await update(step.update);
      else if ("write" in step) writeFileSync(step.write.path, step.write.text);
      else if ("say" in step) await say(step.say);
      else {
        const res = await client.request("session/request_permission", {
          sessionId: params.sessionId,
          toolCall: step.permission,
          options: HERMES_OPTIONS,
        });
        const outcome = res.outcome as { outcome: string; optionId?: string };
        await say(outcome.outcome === "selected" ? `chose ${outcome.optionId} ` : `${outcome.outcome} `);
      }
    }
    return done();
  },
  /**
   * `mcp <tool> <json arguments>`: call one of the session's MCP server's tools (announced first
   * as a tool call, as agents do) and answer with its result: `<tool> -> <text>` (`error:` when
   * the tool failed). `mcp list` answers with the tool names.
   */
  async mcp({ args, params, say, update }) {
    const server = mcpServersOf.get(params.sessionId)?.[0];
    if (!server) {
      await say("no MCP server");
      return done();
    }
    const key = process.env.FAKE_MCP_SHARED ? SHARED : params.sessionId;
    let client = mcpClients.get(key);
    if (!client) {
      client = mcpClient(server);
      mcpClients.set(key, client);
    }
    const mcp = await client;
    const [tool = "", ...rest] = args;
    if (tool === "list") {
      const listed = await mcp.listTools();
      await say(listed.tools.map((t) => t.name).join(","));
      return done();
    }
    const toolArgs = JSON.parse(rest.join(" ") || "{}") as Record<string, unknown>;
    const toolCallId = `mcp-${tool}-${Date.now()}`;
    await update({
      sessionUpdate: "tool_call",
      toolCallId,
      title: `mcp__${server.name}__${tool}`,
      kind: "other",
      status: "in_progress",
      rawInput: toolArgs,
    });
    let text: string;
    let failed = false;
    try {
      const r = (await mcp.callTool({ name: tool, arguments: toolArgs }, undefined, {
        timeout: 10 * 60_000,
      })) as { content?: Array<{ text?: string }>; isError?: boolean };
      failed = r.isError === true;
      text = `${failed ? "error: " : ""}${(r.content ?? []).map((c) => c.text ?? "").join("")}`;
    } catch (err) {
      failed = true;
      text = `protocol error: ${(err as Error).message}`;
    }
    await update({ sessionUpdate: "tool_call_update", toolCallId, status: failed ? "failed" : "completed" });
    await say(`${tool} -> ${text}`);
    return done();
  },
  /** Ask permission for a call of one of Pheby's own tools, named as Qwen Code does (`_meta.toolName`). */
  async phebypermission({ params, client, say }) {
    const res = await client.request("session/request_permission", {
      sessionId: params.sessionId,
      toolCall: {
        toolCallId: "pp1",
        title: JSON.stringify({ question: "q?" }),
        rawInput: { question: "q?" },
        _meta: { toolName: "mcp__pheby__ask_user" },
      },
      options: GENERIC_OPTIONS,
    });
    const outcome = res.outcome as { outcome: string; optionId?: string };
    await say(outcome.outcome === "selected" ? `chose ${outcome.optionId}` : outcome.outcome);
    return done();
  },
  /** Report background work once the turn has ended, as Hermes's main branch does (`_hermes/notification`). */
  async background({ params, client, say }) {
    await say("working in the background");
    setTimeout(() => {
      void client.notify("_hermes/notification", {
        sessionId: params.sessionId,
        kind: "completion",
        title: "Background Process Done (exit 0): make",
        text: "wake [IMPORTANT: Background process proc_1 exited (exit code 0)]",
        notificationIds: ["deleg-1"],
      });
    }, 30);
    return done();
  },
  /** `mode`: answers with the session's mode. */
  async mode({ s, say }) {
    await say(`mode=${s.mode}`);
    return done();
  },
  /** `planexit`: leaves plan mode by itself, as Claude Code does once its plan was accepted. */
  async planexit({ s, say, update }) {
    s.mode = "default";
    if (modesKind === "config")
      await update({
        sessionUpdate: "config_option_update",
        configOptions: settingsOf(s).configOptions ?? [],
      });
    else await update({ sessionUpdate: "current_mode_update", currentModeId: "default" });
    await say("left plan mode");
    return done();
  },
  /** `compact`: compacts its context (a `compaction_update`), and announces a new command list. */
  async compact({ say, update }) {
    await update({ sessionUpdate: "compaction_update", compactionId: "c1", status: "in_progress" });
    await update({ sessionUpdate: "compaction_update", compactionId: "c1", status: "completed" });
    await update({
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "compact", description: "Compact again" }],
    });
    await say("compacted");
    return done();
  },
  /** `wake …`: a wake-up prompt; answers with the prompt's `_meta`. */
  async wake({ params, say }) {
    await say(`woken with ${JSON.stringify(params._meta ?? null)}`);
    return done();
  },
  async echo({ text, say, update }) {
    await update({
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: "secret thoughts" },
    });
    const words = `echo: ${text}`.split(/(?<= )/);
    for (const w of words) await say(w);
    return done();
  },
  async whoami({ s, say, params }) {
    const kinds = params.prompt.map((b) =>
      b.type === "resource" ? `resource(${"text" in b.resource ? b.resource.text : "blob"})` : b.type,
    );
    await say(`model=${s.model} effort=${s.effort} mode=${s.mode} blocks=${kinds.join(",")}`);
    return done();
  },
  async stop({ args, say }) {
    await say(`stopping with ${args[0]}`);
    return done(args[0] as acp.StopReason);
  },
  async error({ say }) {
    await say("about to fail");
    throw new acp.RequestError(-32000, "scripted failure");
  },
  async internal({ say }) {
    await say("about to fail");
    // Gemini CLI's way: the real message rides in `data.details` of a bare "Internal error".
    throw acp.RequestError.internalError({
      details: `Quota exceeded for api_key=sk-live-0123456789abcdef, retry later ${"x".repeat(400)}`,
    });
  },
  /** A tool failure and an error whose text names the host's files (`args`: the paths). */
  async pathError({ args, update, say }) {
    await update({ sessionUpdate: "tool_call", toolCallId: "pe1", title: "Read", status: "in_progress" });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "pe1",
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: `ENOENT: no such file '${args[0]}'` } }],
    });
    await say("about to fail");
    throw acp.RequestError.internalError({ details: `cannot open ${args.join(" nor ")}` });
  },
  async orphan({ say }) {
    // A shim's child kills the shim and goes silent, keeping the pipes (see test/acp/shim.mjs).
    await say("orphaning");
    process.kill(process.ppid, "SIGKILL");
    return never;
  },
  async crash({ say }) {
    await say("about to crash");
    process.exit(3);
  },
  async hang({ say }) {
    await say("hanging");
    return never;
  },
  /** Works for `args[0]` ms whatever happens (it ignores session/cancel), then ends the turn. */
  async sleep({ args, say }) {
    await say("sleeping ");
    await sleep(Number(args[0] ?? 1_000));
    await say("awake");
    return done();
  },
  /** Answers, then loses the session: its next prompt gets "session not found". */
  async forget({ say, params }) {
    await say("forgetting");
    setImmediate(() => {
      delete sessions[params.sessionId];
      save();
    });
    return done();
  },
  /** Prints junk on stdout between its messages (a stray print, a bad line, bytes that are not UTF-8). */
  async garbage({ say }) {
    await say("before ");
    process.stdout.write("Loading model weights... done\n");
    process.stdout.write('{"jsonrpc":"2.0","id":987654,"result":{}}\n'); // answers nothing we asked
    process.stdout.write("[1,2,3]\n");
    process.stdout.write(Buffer.from([0xff, 0xfe, 0x00, 0x0a]));
    await say("after");
    return done();
  },
  async slow({ say, cancel }) {
    for (let i = 0; !cancel.aborted; i++) {
      await say(`tick ${i} `);
      await sleep(20);
    }
    return done("cancelled");
  },
  /** Like `slow`, but keeps working for `args[0]` ms after session/cancel before it stops (a slow-to-stop agent). */
  async stubborn({ args, say, cancel }) {
    for (let i = 0; !cancel.aborted; i++) {
      await say(`tick ${i} `);
      await sleep(20);
    }
    await sleep(Number(args[0] ?? 1_000));
    await say("stopped late");
    return done("cancelled");
  },
  async tools({ update, say }) {
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "List files",
      kind: "execute",
      status: "pending",
      rawInput: { command: "ls", api_key: "sk-123" },
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "t1",
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "/home/secret/file.txt" } }],
    });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "t2",
      title: "Read",
      name: "read_file",
      status: "in_progress",
    });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "t2",
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: `boom ${"x".repeat(1000)}` } }],
    });
    await update({ sessionUpdate: "tool_call", toolCallId: "t3", title: "Left open", status: "in_progress" });
    await say("tools done");
    return done();
  },
  async opencodeTool({ update, say }) {
    // OpenCode 1.18: the first tool_call has only {cwd}; the command comes in an update.
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "oc1",
      title: "bash",
      kind: "execute",
      status: "pending",
      rawInput: { cwd: "/work" },
    });
    const input = { command: "ls -la", description: "List files", cwd: "/work", token: "t-secret" };
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "oc1",
      status: "in_progress",
      title: "ls -la",
      rawInput: input,
    });
    // A repeat of the same state changes nothing.
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "oc1",
      status: "in_progress",
      rawInput: input,
    });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "oc1",
      status: "completed",
      title: "ls -la",
    });
    await say("listed");
    return done();
  },
  async claudeTool({ update, say }) {
    // Claude Code ACP 0.16: tool_call twice (streamed start with {}, then the full input); the
    // tool's name only in `_meta`, the title "Terminal", then the command.
    const _meta = { claudeCode: { toolName: "Bash" } };
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "cc1",
      _meta,
      title: "Terminal",
      kind: "execute",
      status: "pending",
      rawInput: {},
    });
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "cc1",
      _meta,
      title: "`ls -la`",
      kind: "execute",
      status: "pending",
      rawInput: { command: "ls -la", description: "List files" },
    });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "cc1", _meta, status: "completed" });
    await say("listed");
    return done();
  },
  /** A tool first shown by its title with `{}`, then named (`_meta`) with its input; it runs until cancelled. */
  async lateTool({ update, say, cancel }) {
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "lt1",
      title: "Terminal",
      kind: "execute",
      status: "pending",
      rawInput: {},
    });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "lt1",
      _meta: { claudeCode: { toolName: "Bash" } },
      status: "in_progress",
      rawInput: { command: "sleep 600", description: "Wait" },
    });
    await say("waiting");
    while (!cancel.aborted) await sleep(20);
    return done("cancelled");
  },
  async geminiTool({ update, say }) {
    // Gemini CLI 0.61: no tool_call, only updates; the title is the command, the name is in the ID.
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "run_shell_command__run_shell_command_1_0",
      status: "completed",
      title: "rm -rf build",
      kind: "execute",
    });
    await say("done");
    return done();
  },
  async permission({ args, update, client, params, say, cancel }) {
    await update({
      sessionUpdate: "tool_call",
      toolCallId: "p1",
      title: "rm -rf build",
      kind: "execute",
      status: "pending",
      rawInput: { command: "rm -rf build" },
    });
    const options =
      { generic: GENERIC_OPTIONS, gemini: GEMINI_OPTIONS, always: ALWAYS_ONLY_OPTIONS }[args[0] ?? ""] ??
      HERMES_OPTIONS;
    const withdraw = new AbortController();
    if (args[1] === "withdraw") setTimeout(() => withdraw.abort(), 50);
    cancel.addEventListener("abort", () => withdraw.abort());
    const res = await client
      .request(
        "session/request_permission",
        {
          sessionId: params.sessionId,
          toolCall: {
            toolCallId: "p1",
            title: "rm -rf build",
            rawInput: { command: "rm -rf build", description: "Destructive shell command" },
          },
          options,
        },
        { cancellationSignal: withdraw.signal },
      )
      .catch((err: unknown) => ({ outcome: { outcome: `error ${(err as Error).message}` } }));
    const outcome = res.outcome as { outcome: string; optionId?: string };
    await say(outcome.outcome === "selected" ? `chose ${outcome.optionId}` : outcome.outcome);
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: "p1",
      status: /^(allow|proceed|yes)/.test(outcome.optionId ?? "") ? "completed" : "failed",
    });
    return done(cancel.aborted ? "cancelled" : "end_turn");
  },
  async clarify({ args, client, params, say }) {
    const hermesSchema: acp.ElicitationSchema = {
      type: "object",
      properties: {
        answer: {
          type: "string",
          title: "Deploy where?",
          enum: ["staging", "production", "Other (type your answer)"],
        },
        other_answer: { type: "string", title: "Other answer" },
      },
      required: ["answer"],
    };
    const freeSchema: acp.ElicitationSchema = {
      type: "object",
      properties: { answer: { type: "string", title: "Your name?" } },
      required: ["answer"],
    };
    const res = await client.request("elicitation/create", {
      sessionId: params.sessionId,
      mode: "form",
      message: "Need input",
      requestedSchema: args[0] === "free" ? freeSchema : hermesSchema,
    });
    await say(`elicitation: ${JSON.stringify(res)}`);
    return done();
  },
  /** `stderr <words>`: prints the words on stderr (as agents print prompts there), then answers. */
  async stderr({ args, say }) {
    process.stderr.write(`${args.join(" ")}\n`);
    await say("wrote to stderr");
    return done();
  },
  /** `ids`: who the agent runs as: `uid gid umask HOME USER LOGNAME`. */
  async ids({ say }) {
    const mask = process.umask();
    const env = [process.env.HOME, process.env.USER, process.env.LOGNAME].join(" ");
    await say(`${process.getuid?.()} ${process.getgid?.()} ${mask.toString(8).padStart(4, "0")} ${env}`);
    return done();
  },
  /** `probe <path>…`: tries to read each path; answers `<path>=ok` or `<path>=<error code>` per line. */
  async probe({ args, say }) {
    const lines = args.map((path) => {
      try {
        readFileSync(path);
        return `${path}=ok`;
      } catch (err) {
        return `${path}=${(err as NodeJS.ErrnoException).code ?? "error"}`;
      }
    });
    await say(lines.join("\n"));
    return done();
  },
  /** `readlinks`: reads every file the prompt links to (`resource_link`) and answers with their text. */
  async readlinks({ params, say }) {
    const texts = params.prompt.flatMap((b) => {
      if (b.type !== "resource_link") return [];
      try {
        return [readFileSync(fileURLToPath(b.uri), "utf8")];
      } catch (err) {
        return [`${(err as NodeJS.ErrnoException).code ?? "error"}`];
      }
    });
    await say(texts.join("|"));
    return done();
  },
  /** `write <path> <text…>`: writes the file; answers with its mode (octal), as the agent's umask left it. */
  async write({ args: [path = "", ...words], say }) {
    writeFileSync(path, words.join(" "));
    await say((statSync(path).mode & 0o777).toString(8));
    return done();
  },
  /** `group <pid file>`: starts a child in its process group, writes the child's pid to the file, then hangs. */
  async group({ args, say }) {
    const child = spawn("sleep", ["600"], { stdio: "ignore" });
    writeFileSync(args[0]!, String(child.pid));
    await say("holding a child");
    return never;
  },
  async title({ update, s, say }) {
    s.title = "Scripted title";
    await update({ sessionUpdate: "session_info_update", title: "Scripted title" });
    await say("titled");
    return done();
  },
  async files({ update, say }) {
    await say("here are files");
    await update({
      sessionUpdate: "agent_message_chunk",
      content: { type: "image", data: TINY_PNG, mimeType: "image/png" },
    });
    await update({
      sessionUpdate: "agent_message_chunk",
      content: {
        type: "resource",
        resource: { uri: "file:///virtual/report.md", mimeType: "text/markdown", text: "# Report" },
      },
    });
    return done();
  },
  async media({ args, say }) {
    // Split the MEDIA lines across chunks the way a streaming model would.
    const body = `Result:\n${args.map((p) => `MEDIA:${p}`).join("\n")}\nDone. MEDIA:not-a-line`;
    for (let i = 0; i < body.length; i += 5) await say(body.slice(i, i + 5));
    return done();
  },
  async later({ say, params, client }) {
    await say("see you later");
    setTimeout(() => {
      for (const t of ["background ", "result"]) {
        void client.notify("session/update", {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
        });
      }
    }, 30);
    return done();
  },
  /**
   * `updates <json>`: send each step of a JSON array in order: a `session/update` payload
   * (`{"sessionUpdate": …}`: thoughts, plans, usage, tool calls…), `{"say": text}` answer text, or
   * `{"sleep": ms}`. Lets a test script any sequence of updates without a script of its own.
   */
  async updates({ text, update, say }) {
    const steps = JSON.parse(text.trim().slice("updates".length)) as Array<
      acp.SessionUpdate | { say: string } | { sleep: number }
    >;
    for (const step of steps) {
      if ("say" in step) await say(step.say);
      else if ("sleep" in step) await sleep(step.sleep);
      else await update(step);
    }
    return done();
  },
  async notice({ update, say }) {
    await update({
      sessionUpdate: "notice",
      severity: "info",
      title: "Heads up",
      description: "context compacted",
    });
    await say("noticed");
    return done();
  },
};

const stream = acp.ndJsonStream(
  Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
);
const connection = app.connect(stream);
if (process.env.FAKE_LINGER) {
  // Like a native agent started by a shim: stays up after EOF until signalled.
  setInterval(() => {}, 60_000);
  process.stdout.on("error", () => {});
} else void connection.closed.then(() => process.exit(0));
