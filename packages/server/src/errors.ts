import type { ErrorCode } from "@pheby/protocol";

/** A request error the client is told about with its code; anything else becomes `internal_error`. */
export class ProtocolError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

/** The message of every `conversation_not_found`. */
export const conversationNotFound = () =>
  new ProtocolError("conversation_not_found", "Conversation not found");
