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

describe("isPublicAddress: IPv6 forms that embed or translate an IPv4 address, at their exact edges", () => {
  // [address, public?]: the first and last address of each range, and the neighbours just outside.
  it.each([
    // IPv4-translated (SIIT, ::ffff:0:0:0/96): refused whole, whatever IPv4 address it names.
    ["::ffff:0:0:0", false],
    ["::ffff:0:127.0.0.1", false],
    ["::ffff:0:10.0.0.1", false],
    ["::ffff:0:8.8.8.8", false],
    ["::ffff:0:ffff:ffff", false],
    ["::fffe:ffff:ffff:ffff", false], // just below it: reserved space, outside 2000::/3
    ["::ffff:1:0:0", false], // just above it: the same
    // IPv4-mapped (::ffff:0:0/96): judged by the IPv4 address, edges of 10.0.0.0/8 included.
    ["::ffff:0:0", false],
    ["::ffff:9.255.255.255", true],
    ["::ffff:10.0.0.0", false],
    ["::ffff:10.255.255.255", false],
    ["::ffff:11.0.0.0", true],
    ["::ffff:ffff:ffff", false],
    // IPv4-compatible (::/96, deprecated): refused whole.
    ["::8.8.8.8", false],
    ["::ffff:ffff", false],
    // NAT64 well-known prefix (64:ff9b::/96) by its IPv4 address; anything next to it is refused.
    ["64:ff9b::8.8.8.8", true],
    ["64:ff9b::127.0.0.1", false],
    ["64:ff9b::1:808:808", false],
    ["64:ff9b:1::808:808", false], // local-use NAT64
    // Global unicast is 2000::/3; inside it 6to4 and Teredo (which embed IPv4) are refused.
    ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false],
    ["2000::", true],
    ["2001::808:808", false], // Teredo
    ["2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false],
    ["2001:200::", true],
    ["2002::", false], // 6to4
    ["2002:808:808::", false],
    ["2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false],
    ["2003::", true],
    ["3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false],
    ["3fff:1000::", true],
    ["3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true],
    ["4000::", false],
  ])("%s: public %s", (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it("refuses an endpoint whose name resolves to an IPv4-translated address", async () => {
    await expect(
      checkEndpoint("https://push.example.net/x", STRICT, resolveTo("::ffff:0:7f00:1")),
    ).rejects.toThrow(/not public/);
    await expect(checkEndpoint("https://[::ffff:0:a00:1]/x", STRICT)).rejects.toThrow(/not public/);
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
