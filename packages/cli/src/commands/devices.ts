import { type PhebyClient, PhebyError } from "@pheby/client";
import { FEATURE_DEVICES } from "@pheby/protocol";
import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { writeJson, writeLine } from "../io.js";
import { terminalQr } from "../qr.js";

const DEVICES = { features: [FEATURE_DEVICES] } as const;

/** The client, once the server enabled the devices extension (an older server does not know it). */
function requireDevices(client: PhebyClient): PhebyClient {
  if (!client.features.includes(FEATURE_DEVICES))
    throw new PhebyError(
      "not_implemented",
      "this server does not support paired devices (the devices extension)",
    );
  return client;
}

export const pair: Command = {
  name: "pair",
  usage: "[--name NAME]",
  summary:
    "Pair a phone: print a QR code (and its pheby://pair URI) to scan with the app. The code works once, for 10 minutes. Needs the master secret and PHEBY_PUBLIC_URL on the server.",
  details: ["  --name NAME           the device's name in `pheby devices` (else the phone's own)"],
  options: { name: { type: "string" } },
  examples: ["pheby pair", 'pheby pair --name "Anna\'s phone" --json'],
  async run({ flags, io, connect }) {
    const client = requireDevices(await connect(DEVICES));
    const name = flags.name as string | undefined;
    const created = await client.createPairing(name);
    if (flags.json === true) {
      writeJson(io, { code: created.code, uri: created.uri, expires_at: created.expires_at });
      return EXIT.ok;
    }
    io.stdout.write(terminalQr(created.uri, io.stdout.isTTY === true));
    writeLine(io, `Scan this with the Pheby app, or open: ${created.uri}`);
    writeLine(io, `It pairs one device, until ${created.expires_at}.`);
    return EXIT.ok;
  },
};

export const devices: Command = {
  name: "devices",
  usage: "[list | revoke <device_id>]",
  summary:
    "List the paired devices, or revoke one: its connections are closed and its secret refused from then on. Needs the master secret.",
  examples: ["pheby devices", "pheby devices revoke 9f1c0e7a2b3d4c5e6f708192a3b4c5d6"],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    if (action !== "list" && action !== "revoke")
      throw new UsageError(`unknown action "${action}" (list, revoke)`);
    const deviceId = action === "revoke" ? required(rest, 0, "<device_id>") : undefined;
    const client = requireDevices(await connect(DEVICES));
    if (deviceId !== undefined) {
      await client.revokeDevice(deviceId);
      if (flags.json === true) writeJson(io, { device_id: deviceId, revoked: true });
      else writeLine(io, `revoked ${deviceId}`);
      return EXIT.ok;
    }
    const list = await client.listDevices();
    if (flags.json === true) for (const d of list) writeJson(io, d);
    else if (list.length === 0) writeLine(io, "No paired devices.");
    else
      for (const d of list)
        writeLine(
          io,
          `${d.device_id}  ${d.last_seen_at ?? "never seen".padEnd(24)}  ${d.name ?? "(unnamed)"}`,
        );
    return EXIT.ok;
  },
};
