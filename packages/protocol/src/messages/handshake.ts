import { z } from "zod/v3";
import { event, request, Timestamp } from "../common.js";
import { LIMITS, PROTOCOL_VERSION } from "../constants.js";

/** `hello`: the first frame of every connection. The secret is never echoed or logged. */
export const Hello = request(
  "hello",
  {
    secret: z.string().max(LIMITS.shortTextChars).describe("The server's shared secret (PHEBY_SECRET)"),
    // Any integer parses, so the server can answer a wrong version with `version_mismatch`.
    protocol_version: z.number().int().describe("Must be 1"),
    features: z
      .array(z.string().max(LIMITS.featureNameChars))
      .max(LIMITS.helloFeatures)
      .optional()
      .describe(
        'Pheby extension: optional features the client asks for (e.g. "delta.append"); unknown names are ignored',
      ),
  },
  "First frame of a connection; must arrive within 10 s",
);

/** `ready`: successful handshake. */
export const Ready = event(
  "ready",
  {
    protocol_version: z.literal(PROTOCOL_VERSION),
    server: z.string().describe('Server name, "pheby"'),
    features: z
      .array(z.string())
      .optional()
      .describe(
        "Pheby extension: the features enabled on this connection (those asked for and supported); present only when hello carried features",
      ),
    ts: Timestamp,
  },
  "Handshake succeeded",
);

/** `ping`: application-level heartbeat. */
export const Ping = request("ping", {}, "Application-level heartbeat");

/** `pong`: reply to `ping`. */
export const Pong = event("pong", { ts: Timestamp }, "Reply to ping");
