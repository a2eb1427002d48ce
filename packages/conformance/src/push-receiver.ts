// A real Web Push receiver, written from the RFCs with node:crypto only: it plays the push service and
// the user agent at once. It decrypts RFC 8291 `aes128gcm` bodies with its own P-256 key pair and auth
// secret, verifies the RFC 8292 VAPID header, checks every payload against the contract's
// `PushPayload`, and answers what it is told to (201 by default; 404/410/413/429/500, a redirect, or
// never). The `extensions.push` check uses it; so do the server's own tests.
import {
  createDecipheriv,
  createECDH,
  createPublicKey,
  type ECDH,
  hkdfSync,
  randomBytes,
  verify,
} from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { isDeepStrictEqual } from "node:util";
import { PushPayload } from "@pheby/protocol";

/** A push as the receiver got it. */
export interface ReceivedPush {
  endpoint: string;
  headers: IncomingHttpHeaders;
  /** Length of the encrypted body in bytes. */
  bodyBytes: number;
  /** The decrypted plaintext, parsed as JSON. */
  payload: Record<string, unknown>;
  /** The VAPID JWT's verified claims. */
  vapid: { aud: string; sub: string; exp: number; publicKey: string };
  receivedAt: number;
}

/** What to answer next. `hang`: read the request, never answer. */
export type Answer = number | "hang" | { status: number; headers?: Record<string, string> };

/** One subscription of the receiver: its endpoint and keys, as `push.subscribe` sends them. */
export interface ReceiverEndpoint {
  name: string;
  endpoint: string;
  keys: { p256dh: string; auth: string };
  /** Pushes that arrived and decrypted, in order. */
  received: ReceivedPush[];
  /** Requests that arrived at all (answered or not, decrypted or not). */
  requests: number;
  /** Script the next answers (consumed in order; then 201). */
  answer(...answers: Answer[]): void;
  /** Resolves with the `n`th push (1-based; default: the one after the last `next()` returned) once it has arrived. */
  next(n?: number): Promise<ReceivedPush>;
  /** Resolves once `n` requests have arrived. */
  requested(n: number): Promise<void>;
}

interface EndpointState extends ReceiverEndpoint {
  ecdh: ECDH;
  authSecret: Buffer;
  script: Answer[];
  waiters: (() => void)[];
  seen: number;
}

/** A running receiver: make endpoints with {@link PushReceiver.endpoint}, then subscribe them. */
export interface PushReceiver {
  url: string;
  endpoint(name: string): ReceiverEndpoint;
  /** Decryption or VAPID failures (a test asserts there are none). */
  errors: string[];
  close(): Promise<void>;
}

/**
 * Start a receiver on `host` (default 127.0.0.1), port 0. The server under test must be allowed to
 * reach it: a private address needs `PHEBY_PUSH_ALLOW_PRIVATE=true` on a Pheby server.
 */
export async function startReceiver(host = "127.0.0.1"): Promise<PushReceiver> {
  const endpoints = new Map<string, EndpointState>();
  const errors: string[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const name = decodeURIComponent((req.url ?? "").replace(/^\/push\//, ""));
      const state = endpoints.get(name);
      if (!state) {
        res.writeHead(404).end();
        return;
      }
      state.requests++;
      const answer = state.script.shift() ?? 201;
      const status = answer === "hang" ? 0 : typeof answer === "object" ? answer.status : answer;
      if (status >= 200 && status < 300) {
        try {
          state.received.push(decode(state, req.headers, Buffer.concat(chunks)));
        } catch (err) {
          errors.push(`${name}: ${(err as Error).message}`);
        }
      }
      for (const wake of state.waiters.splice(0)) wake();
      if (answer === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      res.writeHead(status, typeof answer === "object" ? answer.headers : undefined).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;

  const waitFor = (state: EndpointState, ready: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => (ready() ? resolve() : state.waiters.push(check));
      check();
    });

  return {
    url,
    errors,
    endpoint(name) {
      const ecdh = createECDH("prime256v1");
      ecdh.generateKeys();
      const authSecret = randomBytes(16);
      const state: EndpointState = {
        name,
        endpoint: `${url}/push/${encodeURIComponent(name)}`,
        keys: { p256dh: ecdh.getPublicKey("base64url"), auth: authSecret.toString("base64url") },
        received: [],
        requests: 0,
        ecdh,
        authSecret,
        script: [],
        waiters: [],
        seen: 0,
        answer: (...answers) => state.script.push(...answers),
        next: async (n = state.seen + 1) => {
          await waitFor(state, () => state.received.length >= n);
          state.seen = Math.max(state.seen, n);
          return state.received[n - 1]!;
        },
        requested: (n) => waitFor(state, () => state.requests >= n),
      };
      endpoints.set(name, state);
      return state;
    },
    async close() {
      for (const res of hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function decode(state: EndpointState, headers: IncomingHttpHeaders, body: Buffer): ReceivedPush {
  if (headers["content-encoding"] !== "aes128gcm") throw new Error("Content-Encoding is not aes128gcm");
  return {
    endpoint: state.endpoint,
    headers,
    bodyBytes: body.length,
    payload: checkPayload(JSON.parse(decrypt(state, body).toString("utf8"))),
    vapid: verifyVapid(headers.authorization, new URL(state.endpoint).origin),
    receivedAt: Date.now(),
  };
}

/** Every payload must be one the contract defines, with no field it lacks (`PushPayload` of @pheby/protocol). */
function checkPayload(value: unknown): Record<string, unknown> {
  const parsed = PushPayload.safeParse(value);
  if (!parsed.success) throw new Error(`payload rejected by PushPayload: ${parsed.error.message}`);
  if (!isDeepStrictEqual(parsed.data, value))
    throw new Error("payload has fields PushPayload does not define");
  return value as Record<string, unknown>;
}

/** RFC 8291 §3.4 key derivation and RFC 8188 record decryption. */
function decrypt(state: EndpointState, body: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  if (idlen !== 65) throw new Error(`keyid is ${idlen} bytes, not an uncompressed P-256 key`);
  const ecdhSecret = state.ecdh.computeSecret(asPublic);
  const uaPublic = state.ecdh.getPublicKey();
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync("sha256", ecdhSecret, state.authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const records = body.subarray(21 + idlen);
  const out: Buffer[] = [];
  for (let offset = 0, seq = 0; offset < records.length; offset += rs, seq++) {
    const record = records.subarray(offset, Math.min(offset + rs, records.length));
    const iv = Buffer.from(nonce);
    iv.writeUInt32BE((iv.readUInt32BE(8) ^ seq) >>> 0, 8); // NONCE XOR SEQ (RFC 8188 §2.3), seq < 2^32
    const decipher = createDecipheriv("aes-128-gcm", cek, iv);
    decipher.setAuthTag(record.subarray(record.length - 16));
    const plain = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
    // Strip the padding: zeros, then the delimiter (2 on the last record, 1 before).
    let end = plain.length - 1;
    while (end >= 0 && plain[end] === 0) end--;
    const last = offset + rs >= records.length;
    if (plain[end] !== (last ? 2 : 1)) throw new Error("bad padding delimiter");
    out.push(plain.subarray(0, end));
  }
  return Buffer.concat(out);
}

/** RFC 8292: `vapid t=<JWT>, k=<public key>`; the JWT is ES256-signed by k for this origin. */
function verifyVapid(header: string | undefined, origin: string): ReceivedPush["vapid"] {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(header ?? "");
  if (!match) throw new Error("Authorization is not a VAPID header");
  const [, jwt, k] = match as unknown as [string, string, string];
  const [head, claims, signature] = jwt.split(".") as [string, string, string];
  const point = Buffer.from(k, "base64url");
  const key = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
    },
    format: "jwk",
  });
  const ok = verify(
    "sha256",
    Buffer.from(`${head}.${claims}`),
    { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(signature, "base64url"),
  );
  if (!ok) throw new Error("VAPID signature does not verify");
  const { aud, sub, exp } = JSON.parse(Buffer.from(claims, "base64url").toString()) as {
    aud: string;
    sub: string;
    exp: number;
  };
  if (aud !== origin) throw new Error(`VAPID aud ${aud} is not ${origin}`);
  if (exp * 1000 < Date.now() || exp * 1000 > Date.now() + 24 * 3600 * 1000) throw new Error("VAPID exp");
  return { aud, sub, exp, publicKey: k };
}
