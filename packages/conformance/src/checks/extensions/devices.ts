// Paired devices: pairing, device secrets and revocation.
import { CLOSE_CODES, FEATURE_DEVICES, PROTOCOL_VERSION } from "@pheby/protocol";
import { CheckFailure, expect } from "../../failure.js";
import type { Check } from "../../types.js";

/** The spec section these checks hold a server to (docs/protocol.md). */
const SECTION = "Extension: paired devices (`devices`)";

export const deviceChecks: Check[] = [
  {
    id: "extensions.devices",
    section: SECTION,
    title:
      "devices: the owner's pair.create gives a single-use code and its pheby://pair URI; a pairing hello gets ready.device; the device secret works as a v1 client's secret on the socket and over HTTP, may not manage devices, and its connections close with 4401 when the owner revokes it; a v1 connection sees none of it",
    async run(ctx) {
      const observer = await ctx.raw("v1");
      await observer.hello(ctx.options.secret);
      const owner = await ctx.connectWith(
        "owner",
        [FEATURE_DEVICES],
        "a v1 server may ignore hello.features",
      );
      const request_id = owner.requestId();
      owner.send({ type: "pair.create", name: "conformance", request_id });
      const answer = await owner.reply(request_id, "pair.create");
      if (answer.type === "error" && answer.error.code === "not_implemented")
        ctx.skip(`the server cannot pair (${answer.error.message})`);
      if (answer.type !== "pair.created")
        throw new CheckFailure("pair.create was not answered with pair.created", answer);
      const uri = new URL(answer.uri);
      expect(
        uri.protocol === "pheby:" && uri.host === "pair" && uri.searchParams.get("code") === answer.code,
        "pair.created.uri is not pheby://pair?…&code=<code>",
        answer,
      );
      expect(
        /^wss?:\/\//.test(uri.searchParams.get("url") ?? ""),
        "the pairing URI's url is not ws:// or wss://",
        answer,
      );

      const phone = await ctx.raw("pairing");
      const paired = await phone.expectReply(
        {
          type: "hello",
          protocol_version: PROTOCOL_VERSION,
          features: [FEATURE_DEVICES],
          pairing_code: answer.code,
          device_name: "conformance phone",
        },
        "ready",
      );
      const device = paired.device;
      if (!device) throw new CheckFailure("a pairing hello's ready has no device", paired);
      const listed = await owner.expectReply({ type: "device.list" }, "device.snapshot");
      const row = listed.devices.find((d) => d.device_id === device.device_id);
      expect(
        row?.name === "conformance",
        "device.list does not show the device with pair.create's name",
        listed,
      );

      // A plain v1 client on the device secret: ready as in v1, requests and HTTP work.
      const v1 = await ctx.raw("device-v1");
      const v1Ready = await v1.hello(device.device_secret);
      expect(
        v1Ready.features === undefined && v1Ready.device === undefined,
        "a v1 hello with a device secret got extension fields in ready",
        v1Ready,
      );
      await v1.ping();
      const download = await ctx.http("/attachments/00000000000000000000000000000000", {
        auth: false,
        headers: { authorization: `Bearer ${device.device_secret}` },
      });
      expect(download.status === 404, `GET with the device secret answered ${download.status}, not 404`);
      const managing = await ctx.raw("device-devices");
      await managing.hello(device.device_secret, [FEATURE_DEVICES]);
      await managing.expectError({ type: "device.list" }, "bad_request", "device.list from a device");

      const seenBefore = new Map([v1, managing].map((conn) => [conn, conn.frames.length]));
      const revoked = await owner.expectReply(
        { type: "device.revoke", device_id: device.device_id },
        "device.revoked",
      );
      expect(revoked.device_id === device.device_id, "device.revoked names another device", revoked);
      for (const conn of [v1, managing]) {
        const error = await conn.waitFor(
          (m) => m.type === "error",
          "the revoked device's unauthorized error",
          {
            from: seenBefore.get(conn) ?? 0,
          },
        );
        expect(
          error.type === "error" && error.error.code === "unauthorized",
          "the revoked device's connection did not get unauthorized",
          error,
        );
        const closed = await conn.waitClosed("of the revoked device");
        expect(
          closed.code === CLOSE_CODES.unauthorized,
          `the revoked device's connection closed with ${closed.code}, not 4401`,
        );
      }
      // The probe holds every frame to the connection's features: a v1 connection's extension frame fails the check.
      await observer.ping();
    },
  },
];
