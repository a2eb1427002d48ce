/**
 * A fake OpenAI-compatible LLM server for driving real agents offline: streaming
 * (SSE) and plain `POST /v1/chat/completions` with scripted text and tool calls,
 * and `GET /v1/models`. It also speaks the Gemini API's `generateContent` /
 * `streamGenerateContent` (for Gemini CLI with `GOOGLE_GEMINI_BASE_URL`) and the
 * Anthropic Messages API's `POST /v1/messages` (for Claude Code with `ANTHROPIC_BASE_URL`)
 * and OpenAI's Responses API `POST /v1/responses` (for Codex), with the same script. A reply may carry
 * reasoning, streamed before its text in each dialect's own form (`reasoning_content` deltas, reasoning
 * summary events, thinking blocks, `thought` parts), so agents that relay their model's thinking do.
 * Listens on 127.0.0.1 only.
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
  /** The model's reasoning, streamed before the text (in word-sized pieces; to Gemini whole, as one thought part). */
  reasoning?: string;
  /**
   * Tool calls. `input` instead of `arguments` makes a Responses API custom (freeform) tool call, as
   * Codex's `apply_patch` takes its patch; the other dialects send it as `{ input }`.
   */
  toolCalls?: Array<{ name: string; arguments?: Record<string, unknown>; input?: string }>;
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

/** A tool call's JSON arguments (a freeform call's input as `{ input }` outside the Responses API). */
const argsOf = (t: NonNullable<Reply["toolCalls"]>[number]): Record<string, unknown> =>
  t.arguments ?? { input: t.input ?? "" };

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
    if (req.method === "POST" && /\/responses(\?|$)/.test(url)) {
      await responses(JSON.parse(await body(req)) as ResponsesRequest, script, requests, res);
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
      function: { name: t.name, arguments: JSON.stringify(argsOf(t)) },
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
                ...(reply.reasoning ? { reasoning_content: reply.reasoning } : {}),
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
    const out = sse(res);
    const send = (delta: object, finishReason: string | null = null, extra: object = {}) =>
      out.send({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
        ...extra,
      });
    send({ role: "assistant", content: "" });
    // DeepSeek's and vLLM's field, which OpenAI-compatible clients read as the model's thinking.
    for await (const piece of out.pieces(reply, "reasoning")) send({ reasoning_content: piece });
    for await (const piece of out.pieces(reply)) send({ content: piece });
    if (out.closed) return;
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
  /** A thought summary part (the model's thinking), not answer text. */
  thought?: boolean;
  functionCall?: { name: string; args?: unknown };
  functionResponse?: { name: string; response?: unknown };
}
interface GeminiRequest {
  contents: Array<{ role?: string; parts?: GeminiPart[] }>;
  /** Gemini CLI's system prompt (it states the approval mode, e.g. plan mode's policies). */
  systemInstruction?: { parts?: GeminiPart[] };
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
  const system = (payload.systemInstruction?.parts ?? []).map((p) => p.text ?? "").join("");
  const messages: ChatMessage[] = [
    ...(system ? [{ role: "system", content: system }] : []),
    ...payload.contents.map((c): ChatMessage => {
      const parts = c.parts ?? [];
      const text = parts.map((p) => p.text ?? "").join("");
      if (parts.some((p) => p.functionResponse)) return { role: "tool", content: text };
      return { role: c.role === "model" ? "assistant" : "user", content: text };
    }),
  ];
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
    functionCall: { name: t.name, args: argsOf(t) },
  }));
  if (!call.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    const thought = reply.reasoning ? [{ text: reply.reasoning, thought: true }] : [];
    res.end(
      JSON.stringify(chunk([...thought, ...(reply.text ? [{ text: reply.text }] : []), ...calls], "STOP")),
    );
    return;
  }
  const out = sse(res);
  // A thought summary comes whole, in one part (Gemini CLI turns each part into a thought of its own).
  if (reply.reasoning) out.send(chunk([{ text: reply.reasoning, thought: true }]));
  for await (const piece of out.pieces(reply)) out.send(chunk([{ text: piece }]));
  if (out.closed) return;
  out.send(chunk(calls.length ? calls : [{ text: "" }], "STOP"));
  res.end();
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
    input: argsOf(t),
  }));
  const stop = uses.length > 0 ? "tool_use" : "end_turn";
  const usage = { input_tokens: 10, output_tokens: 5 };
  const message = { id: `msg_${n}`, type: "message", role: "assistant", model: call.model ?? "fake" };
  if (!call.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    const thinking = reply.reasoning
      ? [{ type: "thinking", thinking: reply.reasoning, signature: "fake-signature" }]
      : [];
    const content = [...thinking, ...(reply.text ? [{ type: "text", text: reply.text }] : []), ...uses];
    res.end(JSON.stringify({ ...message, content, stop_reason: stop, stop_sequence: null, usage }));
    return;
  }
  const out = sse(res);
  const event = (type: string, data: object) => out.send({ type, ...data }, type);
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
  if (reply.reasoning) {
    event("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } });
    for await (const piece of out.pieces(reply, "reasoning")) {
      event("content_block_delta", { index, delta: { type: "thinking_delta", thinking: piece } });
    }
    if (out.closed) return;
    event("content_block_delta", { index, delta: { type: "signature_delta", signature: "fake-signature" } });
    event("content_block_stop", { index });
    index++;
  }
  if (reply.text) {
    event("content_block_start", { index, content_block: { type: "text", text: "" } });
    for await (const piece of out.pieces(reply)) {
      event("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
    }
    if (out.closed) return;
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

interface ResponsesRequest {
  model?: string;
  input: Array<{
    type?: string;
    role?: string;
    content?: string | Array<{ text?: string }>;
    output?: unknown;
  }>;
  tools?: Array<{ name?: string; type?: string }>;
  stream?: boolean;
}

/** OpenAI's Responses API dialect of the same script (always streamed, as Codex asks). */
async function responses(
  payload: ResponsesRequest,
  script: Script,
  requests: LlmRequest[],
  res: import("node:http").ServerResponse,
): Promise<void> {
  const messages: ChatMessage[] = payload.input.flatMap((item): ChatMessage[] => {
    if (item.type === "function_call_output" || item.type === "custom_tool_call_output") {
      const output = typeof item.output === "string" ? item.output : JSON.stringify(item.output ?? "");
      return [{ role: "tool", content: output }];
    }
    if (item.type !== undefined && item.type !== "message") return [];
    const content =
      typeof item.content === "string"
        ? item.content
        : (item.content ?? []).map((c) => c.text ?? "").join("");
    return [{ role: item.role ?? "user", content }];
  });
  const call: LlmRequest = {
    messages,
    tools: (payload.tools ?? []).map((t) => t.name ?? t.type ?? ""),
    stream: true,
    model: payload.model ?? null,
    reasoningEffort: null,
  };
  requests.push(call);
  const reply = script(call);
  const n = requests.length;
  const out = sse(res);
  const event = (type: string, data: object) => out.send({ type, ...data }, type);
  const id = `resp_${n}`;
  event("response.created", { response: { id } });
  let index = 0;
  if (reply.reasoning) {
    // A reasoning item with one summary part: what Codex shows of its model's thinking.
    const item = { type: "reasoning", id: `rs_${n}` };
    const at = { item_id: item.id, output_index: index, summary_index: 0 };
    event("response.output_item.added", { output_index: index, item: { ...item, summary: [] } });
    event("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } });
    for await (const piece of out.pieces(reply, "reasoning")) {
      event("response.reasoning_summary_text.delta", { ...at, delta: piece });
    }
    if (out.closed) return;
    const summary = { type: "summary_text", text: reply.reasoning };
    event("response.reasoning_summary_text.done", { ...at, text: reply.reasoning });
    event("response.reasoning_summary_part.done", { ...at, part: summary });
    event("response.output_item.done", { output_index: index, item: { ...item, summary: [summary] } });
    index++;
  }
  if (reply.text) {
    const item = { type: "message", role: "assistant", id: `msg_${n}` };
    event("response.output_item.added", { output_index: index, item: { ...item, content: [] } });
    for await (const piece of out.pieces(reply)) {
      event("response.output_text.delta", {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        delta: piece,
      });
    }
    if (out.closed) return;
    event("response.output_item.done", {
      output_index: index,
      item: { ...item, content: [{ type: "output_text", text: reply.text, annotations: [] }] },
    });
    index++;
  }
  for (const [i, t] of (reply.toolCalls ?? []).entries()) {
    const call = { id: `fc_${n}_${i}`, call_id: `call_${n}_${i}`, name: t.name };
    const item =
      t.input !== undefined && t.arguments === undefined
        ? { type: "custom_tool_call", ...call, input: t.input }
        : { type: "function_call", ...call, arguments: JSON.stringify(argsOf(t)) };
    event("response.output_item.added", { output_index: index, item });
    event("response.output_item.done", { output_index: index, item });
    index++;
  }
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
  event("response.completed", { response: { id, usage } });
  res.end();
}

/** A server-sent-event response that notices when the client goes away (a cancelled turn). */
function sse(res: import("node:http").ServerResponse) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  return {
    get closed() {
      return closed;
    },
    /** One event; `type` names it (Anthropic and Responses APIs), else a bare `data:` line. */
    send(data: object, type?: string) {
      res.write(`${type ? `event: ${type}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
    },
    /** The reply's text (or reasoning) in word-sized pieces, paced by `chunkDelayMs`, until the client leaves. */
    async *pieces(reply: Reply, part: "text" | "reasoning" = "text"): AsyncGenerator<string> {
      for (const piece of (reply[part] ?? "").split(/(?<= )/).filter(Boolean)) {
        if (closed) return;
        yield piece;
        if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      }
    },
  };
}
