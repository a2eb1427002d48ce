import { FEATURE_PUSH } from "@pheby/protocol";
import type { ConnectionExtension } from "../connection/extension.js";
import type { PushService } from "../push/service.js";

/** `push`: `ready` carries the server's VAPID public key, which a client subscribes with. */
export function pushExtension(push: PushService): ConnectionExtension {
  return {
    feature: FEATURE_PUSH,
    ready: () => ({ push: { vapid_public_key: push.vapidPublicKey } }),
  };
}
