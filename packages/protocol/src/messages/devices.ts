import { z } from "zod/v3";
import { boundedText, event, OpaqueId, request, Timestamp } from "../common.js";
import { LIMITS } from "../constants.js";

// The `devices` extension (FEATURE_DEVICES): pair a phone with a one-time code, one secret per device.

/** A device's display name, as the owner or the pairing phone gives it. */
export const DeviceName = boundedText({ max: LIMITS.deviceNameChars, nonBlank: true });

/**
 * A one-time pairing code: URL-safe base64 characters only (it travels in the `pheby://pair` URI),
 * at least 22 of them (128 random bits). Single-use; expires 10 minutes after `pair.create`.
 */
export const PairingCode = z
  .string()
  .regex(
    new RegExp(`^[A-Za-z0-9_-]{${LIMITS.pairingCodeMinChars},${LIMITS.pairingCodeMaxChars}}$`),
    "must be 22 to 128 URL-safe base64 characters",
  )
  .describe("One-time pairing code (at least 128 random bits, URL-safe base64)");

/** `ready.device`: the credentials a pairing hello created. The only time the secret is ever shown. */
export const DeviceCredentials = z
  .object({
    device_id: z.string(),
    device_secret: z
      .string()
      .regex(/^[A-Za-z0-9_-]{43,256}$/, "must be 43 to 256 URL-safe base64 characters")
      .describe(
        "The device's own secret (at least 256 random bits, URL-safe base64): use it wherever a v1 client uses the shared secret; shown only here, once",
      ),
  })
  .describe("The credentials of a newly paired device");

/** One row of `device.snapshot`. */
export const Device = z
  .object({
    device_id: z.string(),
    name: z.string().nullable().describe("null when neither pair.create nor the pairing hello named it"),
    created_at: Timestamp,
    last_seen_at: Timestamp.nullable().describe("null until the device authenticated with its secret once"),
  })
  .describe("A paired device");

/** `pair.create`: the owner asks for a pairing code (master secret only). */
export const PairCreate = request(
  "pair.create",
  {
    name: DeviceName.optional().describe("The new device's name; wins over the pairing hello's device_name"),
  },
  "Create a one-time pairing code",
);

/** `pair.created`: reply to `pair.create`. */
export const PairCreated = event(
  "pair.created",
  {
    code: PairingCode,
    uri: z
      .string()
      .regex(/^pheby:\/\/pair\?/, "must start with pheby://pair?")
      .describe("pheby://pair?url=<public WebSocket URL>&code=<code>, both query values percent-encoded"),
    expires_at: Timestamp,
  },
  "A pairing code was created",
);

/** `device.list`: list the paired devices (master secret only). */
export const DeviceList = request("device.list", {}, "List paired devices");

/** `device.snapshot`: reply to `device.list`. */
export const DeviceSnapshot = event(
  "device.snapshot",
  { devices: z.array(Device).describe("Oldest first") },
  "All paired devices",
);

/** `device.revoke`: revoke a device (master secret only); its connections are closed with 4401. */
export const DeviceRevoke = request("device.revoke", { device_id: OpaqueId }, "Revoke a paired device");

/** `device.revoked`: reply (with request_id) and broadcast (without) to every `devices` connection. */
export const DeviceRevoked = event("device.revoked", { device_id: z.string() }, "A device was revoked");

/** Parsed form of {@link Device}. */
export type Device = z.infer<typeof Device>;
/** Parsed form of {@link DeviceCredentials}. */
export type DeviceCredentials = z.infer<typeof DeviceCredentials>;
