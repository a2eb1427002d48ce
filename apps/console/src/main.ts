// The Pheby web console: connect screen, conversation list, chat view. It
// talks to the server only through @pheby/client.
import { type ConnectionState, DEFAULT_FEATURES, PhebyClient, PhebyError } from "@pheby/client";
import {
  FEATURE_CHANGES,
  FEATURE_DEVICES,
  FEATURE_EXPIRY,
  FEATURE_INBOX,
  FEATURE_MODES,
  FEATURE_SCHEDULES,
  FEATURE_THOUGHTS,
  FEATURE_WORKSPACES,
} from "@pheby/protocol";
import { ChangesView } from "./changes.js";
import { ChatView } from "./chat.js";
import { Composer } from "./composer.js";
import { ConversationList } from "./conversations.js";
import { DevicesPanel } from "./devices.js";
import { h, replace } from "./dom.js";
import { InboxBar, type InboxState, inboxStateOf } from "./inbox.js";
import { ModePicker } from "./modes.js";
import { NotificationsPanel } from "./notifications.js";
import { QueueView } from "./queue.js";
import { SchedulesPanel } from "./schedules.js";
import { defaultServerUrl, forgetSecret, loadSession, saveSession } from "./session.js";
import { SettingsBar } from "./settings.js";
import {
  Catalogue,
  type NewConversation,
  NewConversationForm,
  type Placement,
  placementOf,
  placementView,
} from "./workspaces.js";

const STATE_LABELS: Record<ConnectionState, string> = {
  idle: "not connected",
  connecting: "connecting…",
  open: "connected",
  reconnecting: "reconnecting…",
  failed: "auth failed",
  closed: "disconnected",
};

const root = h("div", { class: "app" });
document.body.appendChild(root);
const status = h("span", { class: "status", "data-testid": "status", "data-state": "idle", role: "status" });
const banner = h("div", { class: "banner", "data-testid": "banner", role: "alert", hidden: true });

function setStatus(state: ConnectionState): void {
  status.dataset.state = state;
  status.textContent = STATE_LABELS[state];
}

function report(message: string): void {
  banner.textContent = message;
  banner.hidden = false;
  clearTimeout(Number(banner.dataset.timer));
  banner.dataset.timer = String(setTimeout(() => (banner.hidden = true), 8000));
}

/** The connect screen. With a saved secret in this tab's session, connect at once. */
function showConnect(error?: string): void {
  const saved = loadSession();
  // No `name` attributes: even if the form were submitted natively, nothing would reach the URL.
  const url = h("input", {
    type: "url",
    required: true,
    value: saved.url ?? defaultServerUrl(location),
    "aria-label": "Server URL",
    "data-testid": "url",
    autocomplete: "url",
  });
  const secret = h("input", {
    type: "password",
    required: true,
    "aria-label": "Secret",
    "data-testid": "secret",
    autocomplete: "current-password",
  });
  const message = h("p", { class: "error", "data-testid": "connect-error", role: "alert" }, error ?? "");
  const button = h("button", { type: "submit", class: "primary", "data-testid": "connect" }, "Connect");
  const form = h(
    "form",
    { class: "connect", "data-testid": "connect-form" },
    h("h1", {}, "Pheby console"),
    h("label", {}, "Server WebSocket URL", url),
    h("label", {}, "Secret (the master secret, or a device secret)", secret),
    button,
    message,
    h("p", { class: "hint" }, "The secret is kept in this tab's session storage only."),
  );
  const attempt = (to: string, with_: string) => {
    button.disabled = true;
    message.textContent = "Connecting…";
    connect(to, with_).catch((err: unknown) => {
      button.disabled = false;
      message.textContent = describe(err);
    });
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    attempt(url.value.trim(), secret.value);
  });
  replace(root, h("header", {}, h("strong", {}, "Pheby"), status), form);
  // The saved secret is used directly, never copied into the form.
  if (saved.url && saved.secret && !error) attempt(saved.url, saved.secret);
  else secret.focus();
}

function describe(err: unknown): string {
  if (err instanceof PhebyError) {
    if (err.code === "unauthorized") return "Wrong secret (auth failed).";
    if (err.code === "rate_limited") return "Too many failed attempts from this address; try again later.";
    if (err.code === "version_mismatch") return "This server speaks another protocol version.";
    return `Could not connect: ${err.message}`;
  }
  return `Could not connect: ${String(err)}`;
}

async function connect(url: string, secret: string): Promise<void> {
  const client = new PhebyClient({
    url,
    secret,
    reconnect: { initialDelayMs: 250, maxDelayMs: 4000 },
    // The client's defaults (tool detail, plan and usage, the agent's modes and commands, the list as an
    // inbox among them), then pairing and devices, scheduled prompts, when questions expire and the
    // agent's thinking, where the server offers them (modes, inbox, workspaces and changes are named
    // so the console keeps them if the defaults change).
    features: [
      ...new Set([
        ...DEFAULT_FEATURES,
        FEATURE_DEVICES,
        FEATURE_SCHEDULES,
        FEATURE_EXPIRY,
        FEATURE_MODES,
        FEATURE_THOUGHTS,
        FEATURE_INBOX,
        FEATURE_WORKSPACES,
        FEATURE_CHANGES,
      ]),
    ],
  });
  const offState = client.onState(setStatus);
  try {
    await client.connect();
  } catch (err) {
    offState();
    client.close();
    setStatus("failed");
    if (err instanceof PhebyError && err.code === "unauthorized") forgetSecret();
    throw err;
  }
  saveSession(url, secret);
  startApp(client);
}

function startApp(client: PhebyClient): void {
  let current: string | null = null;
  const catalogue = new Catalogue(client);
  /** Create a conversation (with `workspaces`: of the chosen agent, workspace and worktree) and open it. */
  async function createConversation(choice?: NewConversation): Promise<void> {
    try {
      const created = await client.createConversation({
        agentId: choice?.agent_id,
        workspaceId: choice?.workspace_id,
        worktree: choice?.worktree,
      });
      conversations.upsert(created.conversation_id, created.name, undefined, placementOf(created));
      await openConversation(created.conversation_id);
    } catch (err) {
      report(`Create failed: ${(err as Error).message}`);
    }
  }
  const newConversation = new NewConversationForm(catalogue, createConversation);
  const conversations = new ConversationList({
    open: (id) => void openConversation(id),
    // With a choice to make (agents, workspaces, a worktree) the form unfolds; else create at once.
    async create() {
      await catalogue.settled();
      if (newConversation.isOpen) newConversation.close();
      else if (catalogue.enabled && catalogue.hasChoice) newConversation.open();
      else await createConversation();
    },
    async rename(id, name) {
      try {
        const renamed = await client.request({ type: "conversation.rename", conversation_id: id, name });
        conversations.upsert(id, renamed.name);
      } catch (err) {
        report(`Rename failed: ${(err as Error).message}`);
      }
    },
    async remove(id) {
      try {
        await client.request({ type: "conversation.delete", conversation_id: id });
        dropConversation(id);
      } catch (err) {
        report(`Delete failed: ${(err as Error).message}`);
      }
    },
    async archive(id, archived) {
      try {
        await client.archive(id, archived);
        // The conversation.status that answers moves the row; the list of this view is listed again.
        await refreshList();
      } catch (err) {
        report(`${archived ? "Archive" : "Unarchive"} failed: ${(err as Error).message}`);
      }
    },
    placement: (placement) => placementView(placement, catalogue),
  });
  const modes = new ModePicker(client, report);
  const inbox = new InboxBar(client, {
    view: (view) => {
      conversations.setView(view);
      void refreshList();
    },
    open: (id) => void openConversation(id),
    name: (id) => conversations.name(id),
    report,
  });
  conversations.el.insertBefore(newConversation.el, conversations.el.children[1] ?? null);
  conversations.el.insertBefore(inbox.el, conversations.el.children[2] ?? null);
  const composer: Composer = new Composer({
    client,
    conversationId: () => current,
    runId: () => chat.runId,
    sent: (text) => chat.userMessage(text),
    report,
    controls: [modes.el],
  });
  const chat = new ChatView({
    async respondApproval(approval_id, choice, reason) {
      await client.request({
        type: "approval.respond",
        approval_id,
        choice: choice as "once",
        ...(reason ? { reason } : {}),
      });
    },
    async respondClarify(clarify_id, response) {
      await client.request({ type: "clarify.respond", clarify_id, response });
    },
    async fetchAttachment(attachment) {
      const result = await client.download(attachment);
      // Only an inline image keeps its type (an <img> needs it). Anything else is a download: a
      // blob: URL has this page's origin, so an HTML or SVG blob opened from the address bar would
      // run its script as the console, without the server's sandbox CSP.
      const type = attachment.inline_image
        ? (result.contentType ?? attachment.mime_type)
        : "application/octet-stream";
      return new Blob([result.bytes as Uint8Array<ArrayBuffer>], { type });
    },
    runChanged: (runId) => composer.setRun(runId),
  });
  const queue = new QueueView((run_id) => {
    if (!current) return;
    client.request({ type: "run.cancel", conversation_id: current, run_id }).catch((err: Error) => {
      report(`Cancel failed: ${err.message}`);
    });
  });
  const settings = new SettingsBar(client, report);
  const notifications = new NotificationsPanel(client, report);
  const schedules = new SchedulesPanel(client, report);
  // The Changes view takes the timeline's place while open; the message box stays.
  const changes = new ChangesView(client, report, (open) => {
    chat.el.hidden = open;
  });
  const title = h("h2", { "data-testid": "conversation-title" }, "No conversation selected");
  /** `workspaces`: the open conversation's agent, workspace and branch, under its title. */
  const place = h("span", { class: "chat-place", "data-testid": "conversation-place" });
  const showPlace = () => {
    const placement: Placement | undefined = current ? conversations.placement(current) : undefined;
    replace(place, placement ? placementView(placement, catalogue) : null);
  };
  catalogue.onChange(() => {
    conversations.refresh();
    showPlace();
  });
  const main = h(
    "main",
    { class: "chat" },
    h(
      "div",
      { class: "chat-head" },
      h("div", { class: "chat-title" }, title, place),
      chat.meter.el,
      changes.button,
      settings.el,
      schedules.el,
    ),
    notifications.el,
    chat.el,
    changes.el,
    queue.el,
    composer.el,
  );
  settings.el.hidden = true;
  composer.el.hidden = true;

  const devices = new DevicesPanel(client, report);
  const devicesButton = h(
    "button",
    {
      type: "button",
      class: "link",
      "data-testid": "devices",
      hidden: !client.features.includes(FEATURE_DEVICES),
    },
    "Devices",
  );
  devicesButton.addEventListener("click", () => void devices.show());
  client.on("device.revoked", () => void devices.refresh());
  const bell = h(
    "button",
    {
      type: "button",
      class: "link",
      "data-testid": "push-toggle",
      hidden: !client.features.includes("push"),
    },
    "Notifications",
  );
  bell.addEventListener("click", () => notifications.toggle());
  // Presence: a push for the conversation on screen is skipped while this page is in front.
  const sayPresence = () =>
    client.presence(document.visibilityState === "visible" ? "active" : "background", current ?? undefined);
  document.addEventListener("visibilitychange", sayPresence);
  const signOut = h("button", { type: "button", class: "link" }, "Sign out");
  signOut.addEventListener("click", () => {
    document.removeEventListener("visibilitychange", sayPresence);
    forgetSecret();
    client.close();
    showConnect();
  });
  // On a narrow screen the conversation list is a drawer behind this button (CSS hides it on wide ones).
  const layout = h("div", { class: "layout" });
  const drawerToggle = h(
    "button",
    {
      type: "button",
      class: "icon drawer-toggle",
      "aria-label": "Conversations",
      "aria-expanded": "false",
      "data-testid": "drawer-toggle",
    },
    "☰",
  );
  const backdrop = h("div", { class: "backdrop", "data-testid": "drawer-backdrop" });
  const setDrawer = (open: boolean) => {
    layout.classList.toggle("drawer-open", open);
    drawerToggle.setAttribute("aria-expanded", String(open));
  };
  drawerToggle.addEventListener("click", () => setDrawer(!layout.classList.contains("drawer-open")));
  backdrop.addEventListener("click", () => setDrawer(false));
  document.addEventListener("keydown", (event) => event.key === "Escape" && setDrawer(false));
  layout.append(conversations.el, backdrop, main, devices.el);
  replace(
    root,
    h("header", {}, drawerToggle, h("strong", {}, "Pheby"), status, banner, devicesButton, bell, signOut),
    layout,
  );

  async function openConversation(id: string): Promise<void> {
    if (current && current !== id) client.unfollow(current);
    current = id;
    setDrawer(false);
    client.follow(id);
    sayPresence();
    conversations.select(id);
    title.textContent = conversations.name(id);
    showPlace();
    composer.el.hidden = false;
    queue.clear();
    try {
      const snapshot = await client.request({ type: "conversation.open", conversation_id: id });
      if (current !== id) return;
      chat.reset(snapshot);
      queue.set(snapshot.queue ?? []);
      await Promise.all([
        settings.load(id),
        schedules.load(id),
        modes.load(id),
        loadCommands(id),
        markRead(id),
        changes.load(id),
      ]);
    } catch (err) {
      report(`Open failed: ${(err as Error).message}`);
    }
  }

  /** The agent's slash commands for the palette (the `modes` extension; none without it). */
  async function loadCommands(id: string): Promise<void> {
    composer.setCommands([]);
    if (!client.features.includes(FEATURE_MODES)) return;
    try {
      const commands = await client.listCommands(id);
      if (current === id) composer.setCommands(commands);
    } catch (err) {
      report(`Could not list the agent's commands: ${(err as Error).message}`);
    }
  }

  /** `inbox`: what the open conversation shows is read (only conversation.read marks it so). */
  async function markRead(id: string): Promise<void> {
    if (!client.features.includes(FEATURE_INBOX)) return;
    try {
      const state = await client.markRead(id);
      conversations.setState(id, inboxStateOf(state)!);
    } catch (err) {
      report(`Could not mark the conversation read: ${(err as Error).message}`);
    }
  }

  function dropConversation(id: string): void {
    conversations.remove(id);
    if (current !== id) return;
    client.unfollow(id);
    current = null;
    chat.clear();
    queue.clear();
    title.textContent = "No conversation selected";
    showPlace();
    composer.el.hidden = true;
    void settings.load(null);
    void schedules.load(null);
    void modes.load(null);
    void changes.load(null);
    composer.setCommands([]);
  }

  async function refreshList(): Promise<void> {
    try {
      const enabled = client.features.includes(FEATURE_INBOX);
      inbox.setEnabled(enabled);
      const view = enabled ? inbox.view : "all";
      conversations.setView(view);
      const list = await client.listConversations({ archived: view === "archived" });
      const states = new Map<string, InboxState>();
      const placements = new Map<string, Placement>();
      for (const c of list) {
        const state = inboxStateOf(c);
        if (state) states.set(c.conversation_id, state);
        const placement = placementOf(c);
        if (placement) placements.set(c.conversation_id, placement);
      }
      conversations.setAll(list, states, placements);
      conversations.select(current);
      if (current) title.textContent = conversations.name(current);
      showPlace();
    } catch (err) {
      report(`Could not list conversations: ${(err as Error).message}`);
    }
  }

  const mine =
    <T extends { conversation_id: string }>(handler: (m: T) => void) =>
    (m: T) => {
      if (m.conversation_id === current) handler(m);
    };
  // With `inbox` the list holds one side of the archive (as listed): a conversation of the other side
  // stays out of it.
  const listed = (state: InboxState | undefined) =>
    state === undefined || state.archived === (inbox.view === "archived");
  const upsertEntry = (m: { conversation_id: string; name: string } & InboxState & Partial<Placement>) => {
    const state = inboxStateOf(m);
    if (listed(state)) conversations.upsert(m.conversation_id, m.name, state, placementOf(m));
    if (m.conversation_id === current) showPlace();
  };
  client.on("conversation.updated", upsertEntry);
  client.on("conversation.created", upsertEntry);
  client.on("conversation.status", (m) => {
    const state = inboxStateOf(m)!;
    if (!listed(state)) {
      // The open conversation keeps its row until another is opened.
      if (m.conversation_id === current) conversations.setState(m.conversation_id, state);
      else conversations.remove(m.conversation_id);
      return;
    }
    // An answer arrived in the conversation on screen: it is read as it arrives.
    if (m.conversation_id === current && (m.unread ?? 0) > 0 && document.visibilityState === "visible") {
      void markRead(m.conversation_id);
    }
    // A row of this side the list does not hold (unarchived elsewhere): list again for its name.
    if (!conversations.setState(m.conversation_id, state)) void refreshList();
  });
  client.on("conversation.renamed", (m) => {
    conversations.upsert(m.conversation_id, m.name);
    if (m.conversation_id === current) title.textContent = m.name;
  });
  client.on("conversation.deleted", (m) => dropConversation(m.conversation_id));
  client.on(
    "run.accepted",
    mine((m) => {
      // A queued message's run starts: its text leaves the queue for the timeline.
      const queued = queue.take(m.run_id);
      if (queued !== undefined) chat.userMessage(queued);
      chat.runAccepted(m.run_id);
    }),
  );
  client.on(
    "queue.changed",
    mine((m) => queue.set(m.queued)),
  );
  client.on(
    "message.start",
    mine((m) => chat.messageStart(m)),
  );
  client.on(
    "message.delta",
    mine((m) => chat.messageDelta(m)),
  );
  client.on(
    "message.complete",
    mine((m) => chat.messageComplete(m)),
  );
  client.on(
    "run.finished",
    mine((m) => chat.runFinished(m)),
  );
  client.on(
    "tool.event",
    mine((m) => chat.tool(m)),
  );
  client.on(
    "approval.request",
    mine((m) => chat.approval(m)),
  );
  client.on(
    "plan.updated",
    mine((m) => chat.plan(m.run_id, m.entries)),
  );
  client.on(
    "usage.updated",
    mine((m) => chat.usage(m)),
  );
  // The client hands each thought.delta over with the whole thought so far.
  client.on(
    "thought.delta",
    mine((m) => chat.thought(m.run_id, m.thought_id, m.text, true)),
  );
  client.on(
    "thought.complete",
    mine((m) => chat.thought(m.run_id, m.thought_id, m.text, false)),
  );
  client.on(
    "clarify.request",
    mine((m) => chat.clarify(m)),
  );
  client.on(
    "attachment.added",
    mine((m) => chat.attachment(m.attachment)),
  );
  // Resolutions carry no conversation_id; the view ignores IDs it does not show.
  client.on("approval.resolved", (m) => chat.approvalResolved(m));
  client.on("clarify.resolved", (m) => chat.clarifyResolved(m));
  client.on("model.changed", (m) => settings.changed(m));
  client.on("reasoning.changed", (m) => settings.changed(m));
  client.on("yolo.changed", (m) => settings.changed(m));
  client.on("schedule.changed", (m) => schedules.changed(m.schedule, m.deleted));
  client.on("mode.changed", (m) => modes.changed(m));
  client.on("changes.changed", (m) => changes.changed(m));
  client.on("agents.changed", (m) => catalogue.changed(m.agent));
  client.on(
    "commands.snapshot",
    mine((m) => composer.setCommands(m.commands)),
  );

  // After a reconnect the client re-opens the followed conversation: resumed, the missed events
  // have been applied already (it is not among the snapshots); otherwise rebuild from the snapshot.
  // One deleted meanwhile is no longer followed.
  client.onResync((snapshots) => {
    if (!current) return;
    if (!client.isFollowing(current)) return dropConversation(current);
    const snapshot = snapshots.get(current);
    if (snapshot) {
      chat.reset(snapshot);
      queue.set(snapshot.queue ?? []);
    }
    void settings.load(current);
    void schedules.load(current);
    void modes.load(current);
    void loadCommands(current);
    void changes.load(current);
  });
  // A snapshot nobody here asked for (no request_id): the client re-opened the conversation after a
  // missed append delta. Its run text is the whole draft; the stream goes on from it.
  client.on(
    "conversation.history",
    mine((m) => {
      if (m.request_id !== undefined) return;
      chat.reset(m);
      queue.set(m.queue ?? []);
    }),
  );
  // The agents and workspaces, listed on connect and after every reconnect (agents.changed is not
  // replayed).
  const loadCatalogue = () =>
    catalogue.load().catch((err: Error) => report(`Could not list agents and workspaces: ${err.message}`));
  client.onState((state) => {
    if (state === "open") {
      void loadCatalogue();
      void refreshList();
    }
    if (state === "failed") {
      client.close();
      setStatus("failed");
      forgetSecret();
      showConnect("The server no longer accepts this secret (auth failed).");
    }
  });
  void loadCatalogue();
  void refreshList();
}

setStatus("idle");
showConnect();
