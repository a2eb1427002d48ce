import { z } from "zod/v3";
import { event, request, Timestamp, withFieldRules } from "../common.js";
import { LIMITS, PROTOCOL_VERSION } from "../constants.js";
import { DeviceCredentials, DeviceName, PairingCode } from "./devices.js";
import { PushServerInfo } from "./push.js";

/**
 * `hello`: the first frame of every connection. The secret is never echoed or logged. Exactly one of
 * `secret` and `pairing_code` (the latter only with the `devices` feature, so a v1 hello needs `secret`).
 */
export const Hello = withFieldRules(
  request(
    "hello",
    {
      secret: z
        .string()
        .max(LIMITS.shortTextChars)
        .optional()
        .describe(
          "The server's shared secret (PHEBY_SECRET), or a device secret; required unless pairing_code is sent",
        ),
      // Any integer parses, so the server can answer a wrong version with `version_mismatch`.
      protocol_version: z.number().int().describe("Must be 1"),
      features: z
        .array(z.string().max(LIMITS.featureNameChars))
        .max(LIMITS.helloFeatures)
        .optional()
        .describe(
          'Pheby extension: optional features the client asks for (e.g. "delta.append"); unknown names are ignored',
        ),
      pairing_code: PairingCode.optional().describe(
        "Only with the devices feature, instead of secret: the one-time code of pair.created; ready then carries device",
      ),
      device_name: DeviceName.optional().describe(
        "Only with the devices feature and pairing_code: the new device's name (pair.create's name wins)",
      ),
    },
    "First frame of a connection; must arrive within 10 s",
  ),
  [{ kind: "exactlyOne", keys: ["secret", "pairing_code"], missing: "is required" }],
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
    push: PushServerInfo.optional().describe("Only with the push feature"),
    device: DeviceCredentials.optional().describe(
      "Only with the devices feature, after a pairing hello: the new device's credentials, shown this once",
    ),
    ts: Timestamp,
  },
  "Handshake succeeded",
);

/** `ping`: application-level heartbeat. */
export const Ping = request("ping", {}, "Application-level heartbeat");

/** `pong`: reply to `ping`. */
export const Pong = event("pong", { ts: Timestamp }, "Reply to ping");
