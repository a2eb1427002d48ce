// The devices extension's domain, on real SQLite files: pairing codes, the registry,
// the credential resolver and the operator's offline access.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CredentialResolver } from "../src/auth/credentials.js";
import { Lockout } from "../src/auth/lockout.js";
import { openDeviceAdmin } from "../src/devices/admin.js";
import { MAX_OPEN_CODES, PAIRING_CODE_TTL_MS, PairingCodes } from "../src/devices/pairing.js";
import {
  DeviceLimitReached,
  DeviceRegistry,
  MAX_DEVICES,
  SEEN_WRITE_INTERVAL_MS,
} from "../src/devices/registry.js";
import { isPublicWebSocketUrl, pairingUri } from "../src/devices/uri.js";
import { Store } from "../src/store/store.js";
import { useTempDirs } from "./helpers.js";

const MASTER = "master-secret-0123456789abcdef0123";
const tempDir = useTempDirs();

/** A clock the test moves by hand. */
function manualClock(start = 1_750_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

/** A store in a fresh data directory (migrated, so with the devices table). */
function openStore(dataDir = tempDir()): Store {
  return new Store(dataDir);
}

function setup() {
  const clock = manualClock();
  const dataDir = tempDir();
  const store = openStore(dataDir);
  const registry = new DeviceRegistry(store.devices, clock);
  const resolver = new CredentialResolver(MASTER, registry);
  return { clock, dataDir, store, registry, resolver };
}

describe("pairing codes", () => {
  it("are 128 random bits, single use, and name the device only when the owner chose a name", () => {
    const codes = new PairingCodes(manualClock());
    const a = codes.open();
    const b = codes.open("Kitchen tablet");
    expect(a.code).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(Buffer.from(a.code, "base64url")).toHaveLength(16);
    expect(a.code).not.toBe(b.code);
    expect(codes.redeem(a.code)).toEqual({});
    expect(codes.redeem(a.code)).toBeUndefined(); // used
    expect(codes.redeem(b.code)).toEqual({ name: "Kitchen tablet" });
    expect(codes.size).toBe(0);
  });

  it("expire exactly 10 minutes after they were opened", () => {
    const clock = manualClock();
    const codes = new PairingCodes(clock);
    const early = codes.open();
    const late = codes.open();
    expect(early.expiresAt).toBe(clock.now() + PAIRING_CODE_TTL_MS);
    expect(PAIRING_CODE_TTL_MS).toBe(600_000);
    clock.advance(PAIRING_CODE_TTL_MS - 1);
    expect(codes.redeem(early.code)).toEqual({}); // the last millisecond still works
    clock.advance(1);
    expect(codes.redeem(late.code)).toBeUndefined(); // at expires_at it no longer does
    expect(codes.size).toBe(0);
  });

  it("keep at most MAX_OPEN_CODES open, dropping the oldest", () => {
    const codes = new PairingCodes(manualClock());
    const opened = Array.from({ length: MAX_OPEN_CODES + 1 }, () => codes.open());
    expect(codes.size).toBe(MAX_OPEN_CODES);
    expect(codes.redeem(opened[0]!.code)).toBeUndefined();
    expect(codes.redeem(opened[MAX_OPEN_CODES]!.code)).toEqual({});
  });

  it("10,000 guessed codes store nothing, leave the real code working, and the lockout holds them to five", () => {
    const clock = manualClock();
    const codes = new PairingCodes(clock);
    const real = codes.open();
    const lockout = new Lockout({ maxFailures: 5, windowMs: 60_000, durationMs: 300_000 }, clock);
    const heapBefore = process.memoryUsage().heapUsed;
    let checked = 0;
    for (let i = 0; i < 10_000; i++) {
      // The address each guess comes from: one attacker, then 10,000 different ones.
      for (const addr of ["198.51.100.7", `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`]) {
        if (lockout.isLocked(addr)) continue;
        checked++;
        const guess = Buffer.from(createHash("sha256").update(`guess ${addr} ${i}`).digest()).subarray(0, 16);
        expect(codes.redeem(guess.toString("base64url"))).toBeUndefined();
        lockout.fail(addr);
      }
    }
    // One address got five guesses; each of the 10,000 others one. Nothing was stored for any.
    expect(checked).toBe(5 + 10_000);
    expect(lockout.isLocked("198.51.100.7")).toBe(true);
    expect(codes.size).toBe(1);
    expect(lockout.tracked).toBeLessThanOrEqual(10_001);
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(64 * 1024 * 1024);
    expect(codes.redeem(real.code)).toEqual({});
  });
});

describe("device registry", () => {
  it("pairs a device with a 256-bit secret stored only as its SHA-256, named by the owner or the phone", () => {
    const { registry, store, clock } = setup();
    const code = registry.openPairing();
    const phone = registry.pair(code.code, "Pixel 8")!;
    expect(phone.id).toMatch(/^[0-9a-f]{32}$/);
    expect(phone.name).toBe("Pixel 8");
    expect(phone.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(phone.secret, "base64url")).toHaveLength(32);
    const named = registry.pair(registry.openPairing("Anna's phone").code, "Pixel 8")!;
    expect(named.name).toBe("Anna's phone");
    expect(registry.pair(registry.openPairing().code)!.name).toBeNull();

    const rows = store.db.prepare("SELECT * FROM devices ORDER BY rowid").all() as Record<string, unknown>[];
    expect(rows).toHaveLength(3);
    expect(rows[0]).toEqual({
      id: phone.id,
      name: "Pixel 8",
      secret_hash: createHash("sha256").update(phone.secret).digest(),
      created_at: clock.now(),
      last_seen_at: null,
    });
    // The secret itself is nowhere in the database file's rows.
    const dump = JSON.stringify(store.db.prepare("SELECT * FROM devices").raw().all());
    expect(dump).not.toContain(phone.secret);
    expect(registry.list().map((d) => d.name)).toEqual(["Pixel 8", "Anna's phone", null]);
  });

  it("refuses a wrong, used or expired code, and a code cannot pair twice", () => {
    const { registry, clock } = setup();
    expect(registry.pair("not-a-code", "x")).toBeUndefined();
    const code = registry.openPairing().code;
    expect(registry.pair(code, "first")).toBeDefined();
    expect(registry.pair(code, "second")).toBeUndefined();
    const stale = registry.openPairing().code;
    clock.advance(PAIRING_CODE_TTL_MS);
    expect(registry.pair(stale, "late")).toBeUndefined();
    expect(registry.list().map((d) => d.name)).toEqual(["first"]);
  });

  it(`bounds paired devices and open codes together at ${MAX_DEVICES}`, () => {
    const { registry } = setup();
    for (let i = 0; i < MAX_DEVICES - 1; i++) registry.pair(registry.openPairing().code, `d${i}`);
    const last = registry.openPairing(); // the 100th: allowed
    expect(() => registry.openPairing()).toThrow(DeviceLimitReached);
    registry.pair(last.code, "last");
    expect(registry.list()).toHaveLength(MAX_DEVICES);
    expect(() => registry.openPairing()).toThrow(DeviceLimitReached);
    registry.revoke(registry.list()[0]!.id);
    expect(registry.openPairing().code).toBeTypeOf("string");
  });

  it("records last_seen_at on use, at most once a minute per device", () => {
    const { registry, resolver, clock } = setup();
    const phone = registry.pair(registry.openPairing().code, "phone")!;
    const writes: string[] = [];
    const seen = () => registry.list()[0]!.last_seen_at;
    const first = clock.now();
    expect(resolver.resolve(phone.secret)).toEqual({ kind: "device", deviceId: phone.id });
    expect(seen()).toBe(first);
    for (let i = 0; i < 1_000; i++) {
      clock.advance(10);
      resolver.resolve(phone.secret);
      if (seen() !== first) writes.push(String(seen()));
    }
    // 10 s of requests: still the first write.
    expect(writes).toEqual([]);
    clock.advance(SEEN_WRITE_INTERVAL_MS - 10_000);
    resolver.resolve(phone.secret);
    expect(seen()).toBe(clock.now());
  });

  it("revokes one device, or all of them, deleting their hashes", () => {
    const { registry, resolver, store } = setup();
    const a = registry.pair(registry.openPairing().code, "a")!;
    const b = registry.pair(registry.openPairing().code, "b")!;
    const c = registry.pair(registry.openPairing().code, "c")!;
    expect(registry.revoke(a.id)).toBe(true);
    expect(registry.revoke(a.id)).toBe(false);
    expect(resolver.resolve(a.secret)).toBeUndefined();
    expect(resolver.resolve(b.secret)).toEqual({ kind: "device", deviceId: b.id });
    expect(registry.revokeAll().sort()).toEqual([b.id, c.id].sort());
    expect(resolver.resolve(b.secret)).toBeUndefined();
    expect(resolver.resolve(MASTER)).toEqual({ kind: "owner" });
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM devices").get()).toEqual({ n: 0 });
  });
});

describe("credential resolver", () => {
  it("answers owner for the master secret, the device for its secret, nothing otherwise", () => {
    const { registry, resolver } = setup();
    const a = registry.pair(registry.openPairing().code, "a")!;
    const b = registry.pair(registry.openPairing().code, "b")!;
    expect(resolver.resolve(MASTER)).toEqual({ kind: "owner" });
    expect(resolver.resolve(a.secret)).toEqual({ kind: "device", deviceId: a.id });
    expect(resolver.resolve(b.secret)).toEqual({ kind: "device", deviceId: b.id });
    for (const wrong of ["", `${MASTER}x`, MASTER.slice(0, -1), a.secret.slice(1), a.secret.toUpperCase()])
      expect(resolver.resolve(wrong)).toBeUndefined();
  });

  it("compares the presented secret with every device's hash whichever one matches (no early exit)", () => {
    const { registry } = setup();
    const phones = Array.from({ length: 5 }, (_, i) => registry.pair(registry.openPairing().code, `p${i}`)!);
    // Count comparisons through the credentials the resolver reads: each hash is a Buffer it compares.
    for (const target of [phones[0]!, phones[4]!, undefined]) {
      let compared = 0;
      const counting = {
        credentials: () =>
          registry.credentials().map((c) => {
            const hash = c.secret_hash;
            return {
              id: c.id,
              get secret_hash() {
                compared++;
                return hash;
              },
            };
          }),
        seen: () => {},
      };
      const resolved = new CredentialResolver(MASTER, counting).resolve(target?.secret ?? "nobody");
      expect(resolved).toEqual(target ? { kind: "device", deviceId: target.id } : undefined);
      expect(compared).toBe(phones.length);
    }
  });

  it("sees a revoke made through another connection to the database (the operator's command) at the next check", () => {
    const { registry, resolver, dataDir } = setup();
    const phone = registry.pair(registry.openPairing().code, "phone")!;
    const admin = openDeviceAdmin(dataDir)!;
    expect(admin.list().map((d) => d.id)).toEqual([phone.id]);
    expect(admin.revokeAll()).toEqual([phone.id]);
    admin.close();
    expect(resolver.resolve(phone.secret)).toBeUndefined();
  });
});

describe("operator access to the devices of a data directory", () => {
  it("lists and revokes every device offline, and refuses a directory with no database", () => {
    const dataDir = tempDir();
    const store = openStore(dataDir);
    const registry = new DeviceRegistry(store.devices, manualClock());
    const a = registry.pair(registry.openPairing().code, "a")!;
    store.close();
    const admin = openDeviceAdmin(dataDir)!;
    expect(admin.list()).toEqual([{ id: a.id, name: "a", createdAt: 1_750_000_000_000, lastSeenAt: null }]);
    expect(admin.revokeAll()).toEqual([a.id]);
    expect(admin.list()).toEqual([]);
    admin.close();
    expect(openDeviceAdmin(tempDir())).toBeUndefined();
  });
});

describe("pairing URI and public URL", () => {
  it("builds pheby://pair?url=…&code=… with both values query-encoded", () => {
    const uri = pairingUri("wss://pheby.example.com/ws", "AbC-_x");
    expect(uri).toBe("pheby://pair?url=wss%3A%2F%2Fpheby.example.com%2Fws&code=AbC-_x");
    const parsed = new URL(uri);
    expect(parsed.protocol).toBe("pheby:");
    expect(parsed.host).toBe("pair");
    expect(parsed.searchParams.get("url")).toBe("wss://pheby.example.com/ws");
    expect(parsed.searchParams.get("code")).toBe("AbC-_x");
  });

  it("accepts only an absolute ws:// or wss:// URL without credentials, query or fragment", () => {
    for (const ok of ["wss://pheby.example.com/ws", "ws://192.168.1.10:8620/ws", "wss://h/prefix/ws"])
      expect(isPublicWebSocketUrl(ok)).toBe(true);
    for (const bad of [
      "https://pheby.example.com/ws",
      "pheby.example.com/ws",
      "wss://user:pw@pheby.example.com/ws",
      "wss://pheby.example.com/ws?secret=x",
      "wss://pheby.example.com/ws#x",
      "wss://pheby.example.com/ws?",
      "",
    ])
      expect(isPublicWebSocketUrl(bad)).toBe(false);
  });
});
