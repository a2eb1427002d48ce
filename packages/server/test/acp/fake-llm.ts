/**
 * A fake OpenAI-compatible LLM server for driving real agents offline: streaming
 * (SSE) and plain `POST /v1/chat/completions` with scripted text and tool calls,
 * and `GET /v1/models`. It also speaks the Gemini API's `generateContent` /
 * `streamGenerateContent` (for Gemini CLI with `GOOGLE_GEMINI_BASE_URL`) and the
 * Anthropic Messages API's `POST /v1/messages` (for Claude Code with `ANTHROPIC_BASE_URL`),
 * with the same script. Listens on 127.0.0.1 only.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A chat message as agents send it. */
export interface ChatMessage {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** What the fake model answers. */
export interface Reply {
  text?: string;
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Delay between streamed chunks (a slow model to cancel). */
  chunkDelayMs?: number;
}

/** The scripted model: sees every request, returns the reply. */
/** One chat request as the fake model saw it. */
export interface LlmRequest {
  messages: ChatMessage[];
  tools: string[];
  stream: boolean;
  model: string | null;
  /** `reasoning_effort` of the request (OpenAI-compatible reasoning models), if sent. */
  reasoningEffort: string | null;
}

export type Script = (req: LlmRequest) => Reply;

export interface FakeLlm {
  /** Base URL ending in `/v1`. */
  baseUrl: string;
  /** Every chat request received. */
  requests: LlmRequest[];
  close(): Promise<void>;
}

/** Text of a message's content, whatever its shape. */
export function textOf(m: ChatMessage | undefined): string {
  if (!m?.content) return "";
  return typeof m.content === "string" ? m.content : m.content.map((p) => p.text ?? "").join("");
}

async function body(req: IncomingMessage): Promise<string> {
  let data = "";
  for await (const chunk of req) data += chunk;
  return data;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Start the fake LLM. */
export async function startFakeLlm(script: Script, model = "fake-model"): Promise<FakeLlm> {
  const requests: FakeLlm["requests"] = [];
  const server: Server = createServer(async (req, res) => {
    const url = req.url ?? "";
    if (req.method === "GET" && url.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: model, object: "model", owned_by: "fake" }] }));
      return;
    }
    if (req.method === "POST" && /:(stream)?generateContent\b/i.test(url)) {
      await gemini(url, JSON.parse(await body(req)) as GeminiRequest, script, requests, res);
      return;
    }
    if (req.method === "POST" && /\/v1\/messages(\?|$)/.test(url)) {
      await anthropic(JSON.parse(await body(req)) as AnthropicRequest, script, requests, res);
      return;
    }
    if (req.method !== "POST" || !url.endsWith("/chat/completions")) {
      res.writeHead(404).end();
      return;
    }
    const payload = JSON.parse(await body(req)) as {
      messages: ChatMessage[];
      tools?: Array<{ function: { name: string } }>;
      stream?: boolean;
      model?: string;
      reasoning_effort?: string;
    };
    const call: LlmRequest = {
      messages: payload.messages,
      tools: (payload.tools ?? []).map((t) => t.function.name),
      stream: payload.stream === true,
      model: payload.model ?? null,
      reasoningEffort: payload.reasoning_effort ?? null,
    };
    requests.push(call);
    const reply = script(call);
    const id = `chatcmpl-${requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    const toolCalls = (reply.toolCalls ?? []).map((t, i) => ({
      index: i,
      id: `call_${requests.length}_${i}`,
      type: "function",
      function: { name: t.name, arguments: JSON.stringify(t.arguments) },
    }));
    const finish = toolCalls.length > 0 ? "tool_calls" : "stop";
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    if (!call.stream) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: reply.text ?? null,
                ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
              },
              finish_reason: finish,
            },
          ],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    let closed = false;
    res.on("close", () => {
      closed = true;
    });
    const send = (delta: object, finishReason: string | null = null, extra: object = {}) =>
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`,
      );
    send({ role: "assistant", content: "" });
    for (const piece of (reply.text ?? "").split(/(?<= )/).filter(Boolean)) {
      if (closed) return;
      send({ content: piece });
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    }
    if (toolCalls.length > 0) send({ tool_calls: toolCalls });
    send({}, finish, { usage });
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface GeminiPart {
  text?: string;
  functionCall?: { name: string; args?: unknown };
  functionResponse?: { name: string; response?: unknown };
}
interface GeminiRequest {
  contents: Array<{ role?: string; parts?: GeminiPart[] }>;
  tools?: Array<{ functionDeclarations?: Array<{ name: string }> }>;
}

/** The Gemini API's dialect of the same script: `contents` in, `candidates` out (SSE when streaming). */
async function gemini(
  url: string,
  payload: GeminiRequest,
  script: Script,
  requests: LlmRequest[],
  res: import("node:http").ServerResponse,
): Promise<void> {
  const messages: ChatMessage[] = payload.contents.map((c) => {
    const parts = c.parts ?? [];
    const text = parts.map((p) => p.text ?? "").join("");
    if (parts.some((p) => p.functionResponse)) return { role: "tool", content: text };
    return { role: c.role === "model" ? "assistant" : "user", content: text };
  });
  const call: LlmRequest = {
    messages,
    tools: (payload.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name)),
    stream: /:streamGenerateContent/i.test(url),
    model: /models\/([^:/]+):/.exec(url)?.[1] ?? null,
    reasoningEffort: null,
  };
  requests.push(call);
  const reply = script(call);
  const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };
  const chunk = (parts: GeminiPart[], finishReason?: string) => ({
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finishReason ? { finishReason } : {}) }],
    ...(finishReason ? { usageMetadata } : {}),
  });
  const calls: GeminiPart[] = (reply.toolCalls ?? []).map((t) => ({
    functionCall: { name: t.name, args: t.arguments },
  }));
  if (!call.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(chunk([...(reply.text ? [{ text: reply.text }] : []), ...calls], "STOP")));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  for (const piece of (reply.text ?? "").split(/(?<= )/).filter(Boolean)) {
    if (closed) return;
    res.write(`data: ${JSON.stringify(chunk([{ text: piece }]))}\n\n`);
    if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
  }
  res.end(`data: ${JSON.stringify(chunk(calls.length ? calls : [{ text: "" }], "STOP"))}\n\n`);
}

type AnthropicBlock = { type: string; text?: string };
interface AnthropicRequest {
  model?: string;
  messages: Array<{ role: string; content: string | AnthropicBlock[] }>;
  tools?: Array<{ name: string }>;
  stream?: boolean;
}

/** The Anthropic Messages API's dialect of the same script (SSE events when streaming). */
async function anthropic(
  payload: AnthropicRequest,
  script: Script,
  requests: LlmRequest[],
  res: import("node:http").ServerResponse,
): Promise<void> {
  const messages: ChatMessage[] = payload.messages.map((m) => {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    const text = blocks.map((b) => (b.type === "text" ? (b.text ?? "") : "")).join("");
    if (blocks.some((b) => b.type === "tool_result")) return { role: "tool", content: text };
    return { role: m.role, content: text };
  });
  const call: LlmRequest = {
    messages,
    tools: (payload.tools ?? []).map((t) => t.name),
    stream: payload.stream === true,
    model: payload.model ?? null,
    reasoningEffort: null,
  };
  requests.push(call);
  const reply = script(call);
  const n = requests.length;
  const uses = (reply.toolCalls ?? []).map((t, i) => ({
    type: "tool_use",
    id: `toolu_${n}_${i}`,
    name: t.name,
    input: t.arguments,
  }));
  const stop = uses.length > 0 ? "tool_use" : "end_turn";
  const usage = { input_tokens: 10, output_tokens: 5 };
  const message = { id: `msg_${n}`, type: "message", role: "assistant", model: call.model ?? "fake" };
  if (!call.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    const content = [...(reply.text ? [{ type: "text", text: reply.text }] : []), ...uses];
    res.end(JSON.stringify({ ...message, content, stop_reason: stop, stop_sequence: null, usage }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event("message_start", {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  let index = 0;
  if (reply.text) {
    event("content_block_start", { index, content_block: { type: "text", text: "" } });
    for (const piece of reply.text.split(/(?<= )/).filter(Boolean)) {
      if (closed) return;
      event("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    }
    event("content_block_stop", { index });
    index++;
  }
  for (const use of uses) {
    event("content_block_start", { index, content_block: { ...use, input: {} } });
    event("content_block_delta", {
      index,
      delta: { type: "input_json_delta", partial_json: JSON.stringify(use.input) },
    });
    event("content_block_stop", { index });
    index++;
  }
  event("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage });
  event("message_stop", {});
  res.end();
}
