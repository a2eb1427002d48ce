import { ProtocolError } from "../errors.js";
import type { Peer } from "../outbox/outbox.js";
import type { HandlerTable } from "./context.js";

/** Pairing, listing and revoking are the owner's: a device that tries gets `bad_request`. */
function requireOwner(peer: Peer, what: string): void {
  if (peer.principal?.kind !== "owner")
    throw new ProtocolError("bad_request", `only the owner (the master secret) may ${what}`);
}

/** The `devices` extension's requests (a peer that did not enable it gets `unknown_type` from the decoder). */
export const deviceHandlers: HandlerTable = {
  "pair.create": (ctx, req) => {
    requireOwner(req.peer, "pair devices");
    return { rule: "requester", reply: ctx.devices.createPairing(req.msg.name) };
  },

  "device.list": (ctx, req) => {
    requireOwner(req.peer, "list devices");
    return { rule: "requester", reply: { type: "device.snapshot", devices: ctx.devices.list() } };
  },

  "device.revoke": (ctx, req) => {
    requireOwner(req.peer, "revoke devices");
    const { device_id } = req.msg;
    if (!ctx.devices.revoke(device_id)) throw new ProtocolError("not_found", "Device not found");
    // One event: the requester's copy is the reply (with its request_id), every other devices peer gets the broadcast.
    return {
      rule: "broadcast",
      event: { message: { type: "device.revoked", device_id }, conversationId: null },
    };
  },
};
