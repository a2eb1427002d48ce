// Push notifications in the console: the server's subscriptions (list, test, remove) and this
// browser's own, made through a Service Worker (public/sw.js) where the browser has a push service.
import type { PhebyClient } from "@pheby/client";
import type { ServerMessageOf } from "@pheby/protocol";
import { h, replace } from "./dom.js";

type Subscription = ServerMessageOf<"push.subscriptions">["subscriptions"][number];

/** The VAPID key as the bytes `PushManager.subscribe` wants. */
function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const base64 = base64url.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

/** Why this browser cannot subscribe itself, or undefined when it can try. */
function unsupported(client: PhebyClient): string | undefined {
  if (!client.vapidPublicKey) return "The server does not offer push notifications.";
  if (!("serviceWorker" in navigator) || typeof PushManager === "undefined")
    return "This browser has no push support (it needs a Service Worker and a push service).";
  if (!isSecureContext) return "Push needs a secure page (https, or localhost).";
  return undefined;
}

export class NotificationsPanel {
  readonly el = h("section", { class: "push", "data-testid": "push-panel", hidden: true });
  private readonly list = h("ul", { "data-testid": "push-list" });
  private readonly note = h("p", { class: "note", "data-testid": "push-note" });

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
  ) {
    const subscribe = h(
      "button",
      { type: "button", class: "primary", "data-testid": "push-subscribe" },
      "Notify this browser",
    );
    subscribe.addEventListener("click", () => void this.subscribeThisBrowser());
    this.el.append(h("h3", {}, "Push notifications"), subscribe, this.note, this.list);
  }

  /** Show or hide the panel; showing it refreshes the list. */
  toggle(): void {
    this.el.hidden = !this.el.hidden;
    if (!this.el.hidden) void this.refresh();
  }

  async refresh(): Promise<void> {
    const why = unsupported(this.client);
    (this.el.querySelector('[data-testid="push-subscribe"]') as HTMLButtonElement).disabled =
      why !== undefined;
    this.note.textContent = why ?? "";
    if (!this.client.vapidPublicKey) return replace(this.list);
    try {
      const subscriptions = await this.client.listPush();
      replace(this.list, ...subscriptions.map((s) => this.row(s)));
      if (subscriptions.length === 0) this.list.append(h("li", { class: "empty" }, "No subscriptions."));
    } catch (err) {
      this.report(`Could not list push subscriptions: ${(err as Error).message}`);
    }
  }

  private row(s: Subscription): HTMLLIElement {
    const state = s.last_error
      ? `last error: ${s.last_error}`
      : s.last_success_at
        ? "delivering"
        : "not used yet";
    const test = h("button", { type: "button", class: "link", "data-testid": "push-test" }, "Test");
    const remove = h("button", { type: "button", class: "link", "data-testid": "push-remove" }, "Remove");
    test.addEventListener("click", async () => {
      try {
        const tested = await this.client.testPush(s.subscription_id);
        this.report(tested.ok ? "Test notification sent." : "Test notification not delivered.");
      } catch (err) {
        this.report(`Test failed: ${(err as Error).message}`);
      }
      await this.refresh();
    });
    remove.addEventListener("click", async () => {
      try {
        await this.client.unsubscribePush(s.subscription_id);
      } catch (err) {
        this.report(`Remove failed: ${(err as Error).message}`);
      }
      await this.refresh();
    });
    return h(
      "li",
      { "data-subscription-id": s.subscription_id },
      h("span", { class: "push-name" }, s.device_name ?? "unnamed"),
      h("span", { class: "push-origin" }, s.endpoint_origin),
      h("span", { class: "push-state" }, state),
      test,
      remove,
    );
  }

  /**
   * Register the Service Worker, subscribe with the server's VAPID key, hand the subscription to the
   * server. The worker shows what arrives; the endpoint and keys never leave this browser otherwise.
   */
  private async subscribeThisBrowser(): Promise<void> {
    const key = this.client.vapidPublicKey;
    if (!key || unsupported(this.client)) return;
    try {
      const registration = await navigator.serviceWorker.register("./sw.js");
      const subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: keyBytes(key),
      });
      const json = subscription.toJSON() as { endpoint?: string; keys?: Record<string, string> };
      if (!json.endpoint || !json.keys?.p256dh || !json.keys.auth)
        throw new Error("the browser gave no keys");
      await this.client.subscribePush(
        { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } },
        { deviceName: `Console (${navigator.platform || "browser"})` },
      );
      this.report("This browser will get notifications.");
    } catch (err) {
      this.report(`Could not subscribe this browser: ${(err as Error).message}`);
    }
    await this.refresh();
  }
}
