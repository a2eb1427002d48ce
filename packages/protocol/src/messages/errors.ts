import { z } from "zod/v3";
import { event, Timestamp } from "../common.js";
import { ERROR_CODES } from "../constants.js";

/** The `{code, message}` pair shared by WebSocket errors and HTTP error bodies. */
export const ErrorDetail = z
  .object({
    code: z.enum(ERROR_CODES).describe("Machine-readable error code"),
    message: z.string().describe("Human-readable text; never contains secrets, stacks or paths"),
  })
  .describe("A machine-readable error");

/** `error`: every WebSocket error uses this one shape. */
export const ErrorMessage = event(
  "error",
  { error: ErrorDetail, ts: Timestamp },
  "A request or connection error",
);

/** Body of every HTTP error response, e.g. `{"error":{"code":"not_found","message":"Attachment unavailable"}}`. */
export const ErrorBody = z.object({ error: ErrorDetail }).describe("Body of an HTTP error response");

/** Parsed form of {@link ErrorBody}. */
export type ErrorBody = z.infer<typeof ErrorBody>;
/** Parsed form of {@link ErrorDetail}. */
export type ErrorDetail = z.infer<typeof ErrorDetail>;
