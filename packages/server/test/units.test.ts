import { describe, expect, it } from "vitest";
import { nearestChoice } from "../src/agent/nearest.js";
import { longText } from "../src/agent/simulator/index.js";
import { clientAddress, isLoopback, isTrustedProxySetting, lockoutKey } from "../src/auth/address.js";
import { CredentialResolver } from "../src/auth/credentials.js";
import { Lockout, retryAfter } from "../src/auth/lockout.js";
import { REDACTED, redactArgs, truncate } from "../src/util/redact.js";

describe("clientAddress (X-Forwarded-For only from a trusted proxy, by default loopback; rightmost entry)", () => {
  it("uses the direct peer when it is not loopback, whatever the header says", () => {
    expect(clientAddress("203.0.113.5", "1.2.3.4", "loopback")).toBe("203.0.113.5");
    expect(clientAddress("::ffff:203.0.113.5", "1.2.3.4", "loopback")).toBe("203.0.113.5");
    expect(clientAddress("2001:db8::1", "1.2.3.4", "loopback")).toBe("2001:db8::1");
  });

  it("uses the rightmost forwarded address behind a loopback proxy", () => {
    expect(clientAddress("127.0.0.1", "10.0.0.1, 198.51.100.7", "loopback")).toBe("198.51.100.7");
    expect(clientAddress("::1", ["10.0.0.1", "198.51.100.7 "], "loopback")).toBe("198.51.100.7");
    expect(clientAddress("::ffff:127.0.0.1", "2001:db8::2", "loopback")).toBe("2001:db8::2");
  });

  it("falls back to the peer when the header is absent or its last entry is not an IP", () => {
    expect(clientAddress("127.0.0.1", undefined, "loopback")).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "1.2.3.4, garbage", "loopback")).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "", "loopback")).toBe("127.0.0.1");
  });

  it("with trusted proxy none, ignores X-Forwarded-For even from loopback (a local user)", () => {
    expect(clientAddress("127.0.0.1", "198.51.100.7", "none")).toBe("127.0.0.1");
    expect(clientAddress("::1", "198.51.100.7", "none")).toBe("::1");
  });

  it("with a list of proxies, believes only those peers (any spelling of the address)", () => {
    const proxies = ["172.17.0.1", "2001:db8::10"];
    expect(clientAddress("172.17.0.1", "198.51.100.7", proxies)).toBe("198.51.100.7");
    expect(clientAddress("::ffff:172.17.0.1", "198.51.100.7", proxies)).toBe("198.51.100.7");
    expect(clientAddress("2001:db8:0:0::10", "198.51.100.8", proxies)).toBe("198.51.100.8");
    // Loopback is not on the list: a local user's header is ignored.
    expect(clientAddress("127.0.0.1", "198.51.100.7", proxies)).toBe("127.0.0.1");
    expect(clientAddress("172.17.0.2", "198.51.100.7", proxies)).toBe("172.17.0.2");
  });

  it("accepts loopback, none or IP addresses as the setting, nothing else", () => {
    for (const good of ["loopback", "none", ["10.0.0.1"], ["::1", "127.0.0.1"], []])
      expect(isTrustedProxySetting(good)).toBe(true);
    for (const bad of ["all", "", ["caddy.local"], ["10.0.0.0/8"], [1], "127.0.0.1", undefined])
      expect(isTrustedProxySetting(bad)).toBe(false);
  });

  it("knows loopback", () => {
    expect(isLoopback("127.8.9.10")).toBe(true);
    expect(isLoopback("::ffff:127.0.0.1")).toBe(true);
    expect(isLoopback("::1")).toBe(true);
    expect(isLoopback("128.0.0.1")).toBe(false);
    expect(isLoopback("::2")).toBe(false);
  });
});

describe("lockoutKey (IPv4 per address, IPv6 per /64)", () => {
  it("keys IPv4 addresses as themselves", () => {
    expect(lockoutKey("198.51.100.7")).toBe("198.51.100.7");
    expect(lockoutKey("unknown")).toBe("unknown");
  });

  it("keys every spelling of an IPv6 address by its /64", () => {
    expect(lockoutKey("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(lockoutKey("2001:0db8:0001:0002:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(lockoutKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(lockoutKey("::1")).toBe("0:0:0:0::/64");
    expect(lockoutKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(lockoutKey("64:ff9b::192.0.2.33")).toBe("64:ff9b:0:0::/64");
    expect(lockoutKey("1:2:3:4:5:6:192.0.2.33")).toBe("1:2:3:4::/64");
  });

  it("locks a whole IPv6 /64 after five failures from five of its addresses, and no other /64", () => {
    const lockout = new Lockout({ maxFailures: 5, windowMs: 60_000, durationMs: 60_000 }, { now: () => 0 });
    for (let i = 1; i <= 4; i++) expect(lockout.fail(`2001:db8:0:1::${i}`)).toBe(false);
    expect(lockout.fail("2001:db8:0:1::5")).toBe(true);
    expect(lockout.isLocked("2001:db8:0:1:abcd::99")).toBe(true);
    expect(lockout.isLocked("2001:db8:0:2::1")).toBe(false);
    expect(lockout.tracked).toBe(1);
  });
});

describe("Lockout", () => {
  it("locks after maxFailures within the window, for durationMs, per address", () => {
    let now = 0;
    const lockout = new Lockout(
      { maxFailures: 5, windowMs: 60_000, durationMs: 300_000 },
      { now: () => now },
    );
    for (let i = 0; i < 4; i++) expect(lockout.fail("a")).toBe(false);
    expect(lockout.isLocked("a")).toBe(false);
    expect(lockout.fail("a")).toBe(true);
    expect(lockout.isLocked("a")).toBe(true);
    expect(lockout.isLocked("b")).toBe(false);
    expect(lockout.remainingMs("a")).toBe(300_000);
    now += 299_999;
    expect(lockout.isLocked("a")).toBe(true);
    expect(lockout.remainingMs("a")).toBe(1);
    now += 1;
    expect(lockout.isLocked("a")).toBe(false);
    expect(lockout.remainingMs("a")).toBe(0);
    expect(lockout.remainingMs("b")).toBe(0);
  });

  it("retryAfter names the wait in whole seconds, rounded up, at least 1", () => {
    expect([1, 999, 1_000, 1_001, 287_400].map(retryAfter)).toEqual([
      "retry after 1 s",
      "retry after 1 s",
      "retry after 1 s",
      "retry after 2 s",
      "retry after 288 s",
    ]);
  });

  it("does not keep expired locks of many addresses forever", () => {
    let now = 0;
    const lockout = new Lockout({ maxFailures: 1, windowMs: 1_000, durationMs: 1_000 }, { now: () => now });
    for (let i = 0; i <= 10_000; i++) lockout.fail(`10.0.${i >> 8}.${i & 255}`);
    expect(lockout.tracked).toBe(10_001);
    now += 1_000; // every lock has expired; none of those addresses comes back
    expect(lockout.fail("192.0.2.1")).toBe(true);
    expect(lockout.tracked).toBe(1);
  });

  it("bounds live locks: past 100,000 the one expiring soonest is released, the newest stay locked", () => {
    let now = 0;
    const lockout = new Lockout(
      { maxFailures: 1, windowMs: 1_000, durationMs: 3_600_000 },
      { now: () => now },
    );
    const addr = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
    for (let i = 0; i < 100_000; i++) {
      now += 1;
      lockout.fail(addr(i));
    }
    expect(lockout.tracked).toBe(100_000);
    expect(lockout.isLocked(addr(0))).toBe(true);
    now += 1;
    lockout.fail(addr(100_000));
    expect(lockout.tracked).toBe(100_000);
    expect(lockout.isLocked(addr(0))).toBe(false);
    expect(lockout.isLocked(addr(1))).toBe(true);
    expect(lockout.isLocked(addr(100_000))).toBe(true);
  });

  it("forgets failures outside the window and after a success", () => {
    let now = 0;
    const lockout = new Lockout({ maxFailures: 3, windowMs: 1_000, durationMs: 10 }, { now: () => now });
    lockout.fail("a");
    lockout.fail("a");
    now += 1_000;
    expect(lockout.fail("a")).toBe(false);
    lockout.fail("a");
    lockout.succeed("a");
    expect(lockout.fail("a")).toBe(false);
  });
});

describe("secret check", () => {
  it("accepts only the exact secret, any length compared safely", () => {
    const resolver = new CredentialResolver("s3cret", { credentials: () => [], seen: () => {} });
    const check = (candidate: string) => resolver.resolve(candidate) !== undefined;
    expect(check("s3cret")).toBe(true);
    expect(check("s3cre")).toBe(false);
    expect(check("s3cret ")).toBe(false);
    expect(check("")).toBe(false);
    expect(check("x".repeat(10_000))).toBe(false);
  });
});

describe("redactArgs", () => {
  it("redacts secret-looking keys recursively, in any case, inside arrays", () => {
    const out = redactArgs({
      query: "cats",
      API_KEY: "k",
      apiKey: "k",
      "api key": "k",
      nested: { Password: "p", passwd: "p", list: [{ access_token: "t" }, { ok: 1 }] },
      Authorization: "Bearer x",
      cookie: "c",
      credentials: { user: "u" },
      private_key: "pk",
      session_id: "s",
      SECRET: "s",
      auth: "a",
    });
    expect(out).toEqual({
      query: "cats",
      API_KEY: REDACTED,
      apiKey: REDACTED,
      "api key": REDACTED,
      nested: { Password: REDACTED, passwd: REDACTED, list: [{ access_token: REDACTED }, { ok: 1 }] },
      Authorization: REDACTED,
      cookie: REDACTED,
      credentials: REDACTED,
      private_key: REDACTED,
      session_id: REDACTED,
      SECRET: REDACTED,
      auth: REDACTED,
    });
  });

  it("bounds long strings and deep nesting", () => {
    const out = redactArgs({ text: "a".repeat(5_000) }) as { text: string };
    expect(out.text.length).toBe(2_001);
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { d: deep };
    expect(JSON.stringify(redactArgs(deep))).toContain("[TRUNCATED]");
  });

  it("truncates errors", () => {
    expect(truncate("x".repeat(600)).length).toBe(500);
    expect(truncate("short")).toBe("short");
  });
});

describe("simulator longText", () => {
  it("has exactly N characters", () => {
    for (const n of [1, 27, 28, 29, 1_000_000]) expect(longText(n).length).toBe(n);
  });
});

describe("nearestChoice (the documented mapping of a choice the agent does not offer)", () => {
  it("keeps an offered choice, narrows an approval before widening it, and never turns deny into an approval", () => {
    const all = ["once", "session", "always", "deny"] as const;
    for (const c of all) expect(nearestChoice(c, all)).toBe(c);
    expect(nearestChoice("session", ["once", "always", "deny"])).toBe("once");
    expect(nearestChoice("always", ["once", "deny"])).toBe("once");
    expect(nearestChoice("always", ["once", "session", "deny"])).toBe("session");
    expect(nearestChoice("once", ["session", "always", "deny"])).toBe("session");
    expect(nearestChoice("once", ["always", "deny"])).toBe("always");
    expect(nearestChoice("deny", ["once", "session", "always"])).toBeUndefined();
    expect(nearestChoice("once", ["deny"])).toBeUndefined();
  });
});
