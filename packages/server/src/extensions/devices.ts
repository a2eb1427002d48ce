import { FEATURE_DEVICES } from "@pheby/protocol";
import type { ConnectionExtension } from "../connection/extension.js";
import type { Devices } from "../devices/devices.js";

/**
 * `devices`: a hello may carry a one-time `pairing_code` instead of the secret. It authenticates the
 * device it creates, whose ID and secret `ready.device` carries, once; a wrong, used or expired code
 * is refused like a wrong secret.
 */
export function devicesExtension(devices: Devices): ConnectionExtension {
  return {
    feature: FEATURE_DEVICES,
    credential: {
      presented: (hello) => hello.pairing_code !== undefined,
      redeem: (hello) => {
        const device =
          hello.pairing_code === undefined ? undefined : devices.pair(hello.pairing_code, hello.device_name);
        if (!device) return { refused: "Invalid pairing code (wrong, used or expired)" };
        return {
          principal: { kind: "device", deviceId: device.id },
          ready: { device: { device_id: device.id, device_secret: device.secret } },
        };
      },
    },
  };
}
