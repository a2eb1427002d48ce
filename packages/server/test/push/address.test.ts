import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { startReceiver } from "../../../conformance/src/push-receiver.js";
import {
  checkEndpoint,
  checkPeer,
  EndpointRefused,
  isPublicAddress,
  MAX_ENDPOINT_LENGTH,
  parseEndpoint,
  type Resolve,
} from "../../src/push/address.js";

const STRICT = { allowPrivate: false };
const LAN = { allowPrivate: true };
const resolveTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

describe("isPublicAddress", () => {
  it.each([
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "192.0.2.1",
    "198.18.0.1",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:7f00:1",
    "fe80::1",
    "fe80::1%eth0",
    "fd12:3456::1",
    "fc00::1",
    "ff02::1",
    "2001:db8::1",
    "64:ff9b::10.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::1",
    "not-an-ip",
  ])("%s is not public", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "100.128.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
  ])("%s is public", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe("parseEndpoint / checkEndpoint (at subscribe time)", () => {
  it.each([
    ["http://push.example.net/x", "must be an https URL"],
    ["ftp://push.example.net/x", "must be an https URL"],
    ["push.example.net/x", "not an absolute URL"],
    ["https://user:pw@push.example.net/x", "user info"],
    ["https://127.0.0.1/x", "not public"],
    ["https://2130706433/x", "not public"],
    ["https://0x7f.1/x", "not public"],
    ["https://[::1]/x", "not public"],
    ["https://[::ffff:127.0.0.1]/x", "not public"],
    ["https://169.254.169.254/latest/meta-data", "not public"],
    ["https://[fd00::1]/x", "not public"],
    ["https://10.0.0.8:8443/x", "not public"],
  ])("refuses %s (%s) and never echoes the endpoint", async (endpoint, reason) => {
    const err = await checkEndpoint(endpoint, STRICT).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointRefused);
    expect((err as Error).message).toContain(reason);
    expect((err as Error).message).not.toContain(endpoint);
  });

  it("refuses a name that resolves to loopback (localhost through the system resolver)", async () => {
    await expect(checkEndpoint("https://localhost/push", STRICT)).rejects.toThrow(/not public/);
  });

  it("refuses a name when any address it resolves to is private (a rebinding answer)", async () => {
    await expect(
      checkEndpoint("https://push.example.net/x", STRICT, resolveTo("93.184.216.34", "10.0.0.1")),
    ).rejects.toThrow(/not public/);
    await expect(checkEndpoint("https://push.example.net/x", STRICT, async () => [])).rejects.toThrow(
      /does not resolve/,
    );
    const failing: Resolve = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    await expect(checkEndpoint("https://nowhere.invalid/x", STRICT, failing)).rejects.toThrow(
      /does not resolve/,
    );
  });

  it("accepts https to public addresses, and a literal public address without resolving", async () => {
    const url = await checkEndpoint(
      "https://push.example.net/wpush/v2/abc",
      STRICT,
      resolveTo("93.184.216.34"),
    );
    expect(url.origin).toBe("https://push.example.net");
    const never: Resolve = async () => {
      throw new Error("must not resolve a literal");
    };
    await expect(checkEndpoint("https://93.184.216.34/x", STRICT, never)).resolves.toBeInstanceOf(URL);
  });

  it("with PHEBY_PUSH_ALLOW_PRIVATE allows plain http and private addresses (a LAN ntfy, the tests)", async () => {
    await expect(checkEndpoint("http://127.0.0.1:8080/up/x", LAN)).resolves.toBeInstanceOf(URL);
    await expect(
      checkEndpoint("https://ntfy.lan/up/x", LAN, resolveTo("192.168.1.10")),
    ).resolves.toBeInstanceOf(URL);
    // Still a URL of a web scheme, without user info.
    await expect(checkEndpoint("file:///etc/passwd", LAN)).rejects.toThrow(/https or http/);
    await expect(checkEndpoint("http://a:b@127.0.0.1/x", LAN)).rejects.toThrow(/user info/);
  });

  it("bounds the endpoint's length exactly", () => {
    const base = "https://93.184.216.34/";
    const atLimit = base + "a".repeat(MAX_ENDPOINT_LENGTH - base.length);
    expect(parseEndpoint(atLimit, STRICT).hostname).toBe("93.184.216.34");
    expect(() => parseEndpoint(`${atLimit}a`, STRICT)).toThrow(/longer than/);
  });
});

describe("checkPeer (the address actually connected to)", () => {
  it("destroys a socket connected to loopback before anything is written", async () => {
    const receiver = await startReceiver();
    try {
      const { port } = new URL(receiver.url);
      const socket = connect(Number(port), "127.0.0.1");
      checkPeer(socket, STRICT);
      socket.write("POST /push/x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
      const err = await new Promise<Error>((resolve) => socket.once("error", resolve));
      expect(err).toBeInstanceOf(EndpointRefused);
      expect(socket.destroyed).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it("leaves the socket alone when private addresses are allowed", async () => {
    const receiver = await startReceiver();
    try {
      const { port } = new URL(receiver.url);
      const socket = connect(Number(port), "127.0.0.1");
      checkPeer(socket, LAN);
      await new Promise((resolve) => socket.once("connect", resolve));
      expect(socket.destroyed).toBe(false);
      socket.destroy();
    } finally {
      await receiver.close();
    }
  });
});
