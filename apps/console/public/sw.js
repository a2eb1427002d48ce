// The console's Service Worker: shows the server's push notifications (decrypted by the browser).
// A `resolved` push closes the notification it replaces (same tag), so no stale question stays.
self.addEventListener("push", (event) => {
  let payload = {};
  try {
    payload = event.data ? event.data.json() : {};
  } catch {
    return;
  }
  const tag = typeof payload.tag === "string" ? payload.tag : undefined;
  if (payload.kind === "resolved") {
    event.waitUntil(
      self.registration.getNotifications(tag ? { tag } : {}).then((shown) => {
        for (const n of shown) n.close();
      }),
    );
    return;
  }
  const titles = {
    approval: "Approval needed",
    clarify: "A question for you",
    run_finished: "Run finished",
    message: "New message",
    test: "Pheby",
  };
  const title = payload.title ?? titles[payload.kind] ?? "Pheby";
  event.waitUntil(
    self.registration.showNotification(title, {
      body: payload.body ?? titles[payload.kind] ?? "",
      tag,
      data: { conversation_id: payload.conversation_id },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(
    self.clients.matchAll({ type: "window" }).then((windows) => {
      const open = windows.find((w) => w.url.includes("/console/"));
      return open ? open.focus() : self.clients.openWindow("./");
    }),
  );
});
