import { decodeServerFrame, FEATURE_DEVICES, PROTOCOL_VERSION } from "@pheby/protocol";
import { PhebyError } from "./errors.js";
import { defaultWebSocket, type WebSocketConstructor } from "./socket.js";
import { frameText, lockoutError, transportFailure } from "./transport.js";

/** What a `pheby://pair?url=…&code=…` URI holds. */
export interface PairingUri {
  /** The server's public WebSocket URL. */
  url: string;
  /** The one-time pairing code. */
  code: string;
}

/** Parse a pairing URI (the `uri` of `pair.created`, what the QR code holds); throws a TypeError naming what is wrong. */
export function parsePairingUri(uri: string): PairingUri {
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch {
    throw new TypeError("not a pairing URI (pheby://pair?url=…&code=…)");
  }
  if (parsed.protocol !== "pheby:" || parsed.host !== "pair")
    throw new TypeError("not a pairing URI: it must start with pheby://pair?");
  const url = parsed.searchParams.get("url");
  const code = parsed.searchParams.get("code");
  if (!url || !/^wss?:\/\//.test(url)) throw new TypeError("pairing URI: url must be a ws:// or wss:// URL");
  if (!code) throw new TypeError("pairing URI: code is missing");
  return { url, code };
}

/** Options of {@link pairDevice}. */
export interface PairDeviceOptions {
  /** The device's name, shown in the owner's device list (the name the owner gave the code wins). */
  deviceName?: string;
  /** WebSocket implementation; defaults to the global one, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** How long to wait for the server's answer (default 30 s). */
  timeoutMs?: number;
}

/** A newly paired device: connect with `new PhebyClient({ url, secret: deviceSecret })` from now on. */
export interface PairedDevice {
  url: string;
  deviceId: string;
  /** Shown this once: store it (it is the device's only credential). */
  deviceSecret: string;
}

/**
 * Pair this device with the server of a pairing URI (the `devices` extension): one connection that
 * says `hello` with the code instead of a secret and receives the device's own secret. Rejects with
 * a {@link PhebyError}: `unauthorized` for a wrong, used or expired code (or a server without
 * pairing), `rate_limited`, `connection_closed`, `timeout`.
 */
export async function pairDevice(uri: string, options: PairDeviceOptions = {}): Promise<PairedDevice> {
  const { url, code } = parsePairingUri(uri);
  const Ctor = options.WebSocket ?? (await defaultWebSocket());
  const socket = new Ctor(url);
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise<PairedDevice>((resolve, reject) => {
    let settled = false;
    let failure: PhebyError | undefined;
    const finish = (result: PairedDevice | PhebyError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close(1000, "paired");
      if (result instanceof PhebyError) reject(result);
      else resolve(result);
    };
    const timer = setTimeout(
      () => finish(new PhebyError("timeout", `no answer to the pairing hello within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.addEventListener("open", () =>
      socket.send(
        JSON.stringify({
          type: "hello",
          protocol_version: PROTOCOL_VERSION,
          features: [FEATURE_DEVICES],
          pairing_code: code,
          ...(options.deviceName === undefined ? {} : { device_name: options.deviceName }),
        }),
      ),
    );
    socket.addEventListener("message", (event) => {
      const decoded = decodeServerFrame(frameText(event.data));
      if (!decoded.ok) return finish(new PhebyError("invalid_frame", decoded.error.message));
      const message = decoded.message;
      if (message.type === "error") return finish(new PhebyError(message.error.code, message.error.message));
      if (message.type !== "ready") return;
      if (!message.device)
        return finish(
          new PhebyError("unauthorized", "the server did not pair this device (no devices feature)"),
        );
      finish({ url, deviceId: message.device.device_id, deviceSecret: message.device.device_secret });
    });
    socket.addEventListener("error", (event) => {
      failure ??= (() => {
        const why = transportFailure(event, url);
        return why
          ? new PhebyError("connection_closed", why.message, { status: why.status, cause: why.cause })
          : undefined;
      })();
    });
    socket.addEventListener("close", (event) =>
      finish(
        failure ??
          lockoutError(event) ??
          new PhebyError("connection_closed", `closed (${event.code}) before the pairing finished`),
      ),
    );
  });
}
