/**
 * The 256 KiB bound of one `tool.event`: its content's last blocks are cut first, each marked
 * `truncated` (a text keeps its end, a patch its start), then, should that not do, its locations.
 */
import { LIMITS, type ToolContentBlock } from "@pheby/protocol";
import { cutBytes } from "./diff.js";
import { lastChars } from "./redact-output.js";
import type { ToolDetail } from "./tool-detail.js";

/** Room left for what a connection's copy adds to the event (`request_id`, `seq`). */
export const TOOL_EVENT_RESERVE_BYTES = 512;

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/**
 * `detail` cut so that `event` (the tool event's other fields) with it is at most
 * {@link LIMITS}.toolEventBytes of JSON, less {@link TOOL_EVENT_RESERVE_BYTES}.
 */
export function boundDetail(event: object, detail: ToolDetail): ToolDetail {
  const limit = LIMITS.toolEventBytes - TOOL_EVENT_RESERVE_BYTES;
  if (bytes({ ...event, ...detail }) <= limit) return detail;
  const content = detail.content ? [...detail.content] : undefined;
  const out: ToolDetail = { ...detail, ...(content ? { content } : {}) };
  for (let i = (content?.length ?? 0) - 1; i >= 0; i--) {
    // JSON escapes make a payload's bytes on the wire more than its own: shrink until it fits or is empty.
    for (
      let over = bytes({ ...event, ...out }) - limit;
      over > 0;
      over = bytes({ ...event, ...out }) - limit
    ) {
      const before = content![i]!;
      content![i] = shrink(before, over);
      if (isEmpty(content![i]!) || JSON.stringify(content![i]) === JSON.stringify(before)) break;
    }
    if (bytes({ ...event, ...out }) <= limit) return out;
  }
  // Still over: the locations go, last first.
  while (out.locations && out.locations.length > 0 && bytes({ ...event, ...out }) > limit) {
    out.locations = out.locations.slice(0, -1);
  }
  return out;
}

/** A block at least `over` bytes of JSON smaller (emptied when it cannot give that much), marked truncated. */
function shrink(block: ToolContentBlock, over: number): ToolContentBlock {
  if (block.type === "text") {
    // Each character costs at least one byte of JSON: dropping `over` of them saves `over` bytes.
    const keep = Math.max(0, block.text.length - over);
    return { ...block, text: keep === 0 ? "" : lastChars(block.text, keep), truncated: true };
  }
  if (block.type === "diff") {
    // Each byte of the patch costs at least one byte of JSON: dropping `over` of them saves `over` bytes.
    const size = Buffer.byteLength(block.patch);
    const patch = size <= over ? "" : cutBytes(block.patch, size - over).text;
    return { ...block, patch, truncated: true };
  }
  return block;
}

function isEmpty(block: ToolContentBlock): boolean {
  return (block.type === "text" && block.text === "") || (block.type === "diff" && block.patch === "");
}
