// "Pair a phone" and the paired devices (the `devices` extension): the owner opens a one-time
// code, shown as a QR code drawn on a canvas, and revokes devices. A console signed in with a
// device secret is told that only the owner may.
import { type PhebyClient, PhebyError } from "@pheby/client";
import type { ServerMessageOf } from "@pheby/protocol";
import { confirmOnSecondClick, h, replace } from "./dom.js";
import { drawQr } from "./qr.js";

type Device = ServerMessageOf<"device.snapshot">["devices"][number];

export class DevicesPanel {
  readonly el = h("section", {
    class: "devices-panel",
    "data-testid": "devices-panel",
    "aria-label": "Devices",
    hidden: true,
  });
  private readonly name = h("input", {
    type: "text",
    maxlength: 200,
    placeholder: "Name (optional)",
    "aria-label": "Device name",
    "data-testid": "pair-name",
  });
  private readonly pairing = h("div", { class: "pairing", "data-testid": "pairing" });
  private readonly list = h("ul", { class: "device-list", "data-testid": "device-list" });
  private readonly note = h("p", { class: "hint", "data-testid": "devices-note" });
  private readonly owner = h("div", { class: "owner-only" });

  constructor(
    private readonly client: PhebyClient,
    private readonly report: (message: string) => void,
  ) {
    const pairForm = h(
      "form",
      { class: "pair-form" },
      this.name,
      h("button", { type: "submit", class: "primary", "data-testid": "pair" }, "Pair a phone"),
    );
    pairForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.pair();
    });
    this.owner.append(pairForm, this.pairing, h("h3", {}, "Paired devices"), this.list);
    this.el.append(
      h(
        "div",
        { class: "panel-head" },
        h("h2", {}, "Devices"),
        h(
          "button",
          { type: "button", class: "icon", "aria-label": "Close", onclick: () => this.hide() },
          "×",
        ),
      ),
      this.note,
      this.owner,
    );
  }

  /** Show the panel and load the device list. */
  async show(): Promise<void> {
    this.el.hidden = false;
    await this.refresh();
  }

  hide(): void {
    this.el.hidden = true;
    replace(this.pairing);
  }

  /** Reload the list (also when another client revoked a device). */
  async refresh(): Promise<void> {
    if (this.el.hidden) return;
    try {
      const devices = await this.client.listDevices();
      this.owner.hidden = false;
      this.note.textContent =
        "Pair a phone by scanning the code with the Pheby app. Each device has its own secret; revoking one cuts it off at once.";
      this.render(devices);
    } catch (err) {
      if (err instanceof PhebyError && err.code === "bad_request") {
        // Signed in with a device secret: only the owner (the master secret) manages devices.
        this.owner.hidden = true;
        this.note.textContent =
          "This console is signed in with a device secret. Only the owner (the master secret) can pair and revoke devices.";
        return;
      }
      this.report(`Could not list devices: ${(err as Error).message}`);
    }
  }

  private async pair(): Promise<void> {
    const name = this.name.value.trim();
    try {
      const created = await this.client.createPairing(name === "" ? undefined : name);
      const canvas = h("canvas", {
        class: "qr",
        "data-testid": "pair-qr",
        role: "img",
        "aria-label": "Pairing QR code",
      });
      drawQr(canvas, created.uri);
      const expires = new Date(created.expires_at);
      replace(
        this.pairing,
        canvas,
        h(
          "p",
          {},
          "Scan it with the Pheby app. It pairs one device, until ",
          expires.toLocaleTimeString(),
          ".",
        ),
        h("code", { class: "uri", "data-testid": "pair-uri" }, created.uri),
      );
      this.name.value = "";
    } catch (err) {
      replace(this.pairing, h("p", { class: "error", "data-testid": "pair-error" }, (err as Error).message));
    }
  }

  private render(devices: Device[]): void {
    if (devices.length === 0) {
      replace(this.list, h("li", { class: "hint" }, "No paired devices."));
      return;
    }
    replace(this.list, ...devices.map((d) => this.row(d)));
  }

  private row(device: Device): HTMLElement {
    const seen = device.last_seen_at
      ? `last seen ${new Date(device.last_seen_at).toLocaleString()}`
      : "never seen";
    const revoke = h("button", { type: "button", class: "danger", "data-testid": "revoke" }, "Revoke");
    confirmOnSecondClick(revoke, "Revoke?", () => {
      this.client.revokeDevice(device.device_id).then(
        () => this.refresh(),
        (err: Error) => this.report(`Revoke failed: ${err.message}`),
      );
    });
    return h(
      "li",
      { "data-device-id": device.device_id },
      h("span", { class: "device-name" }, device.name ?? "(unnamed)"),
      h("span", { class: "hint" }, seen),
      revoke,
    );
  }
}
