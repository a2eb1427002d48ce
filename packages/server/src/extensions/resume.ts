import { FEATURE_RESUME } from "@pheby/protocol";
import type { ConnectionExtension } from "../connection/extension.js";
import type { ResumeOutbox } from "../resume/outbox.js";

/** `resume`: a direct reply about a conversation carries its `seq` (see {@link ResumeOutbox.replyFields}). */
export function resumeExtension(resume: ResumeOutbox): ConnectionExtension {
  return {
    feature: FEATURE_RESUME,
    replyFields: (_connection, reply) => resume.replyFields(reply),
  };
}
