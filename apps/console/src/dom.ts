// A tiny DOM builder. Strings become text nodes, never HTML.

type Attrs = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;
type Child = Node | string | null | undefined | false;

/** Create an element: `on*` attributes become listeners, `false`/`undefined` attributes are skipped. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (key === "class") el.className = String(value);
    else if (key === "value" && "value" in el) (el as HTMLInputElement).value = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

/** Append children, skipping empty ones. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

/** Replace all children. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/**
 * A destructive button that needs two clicks: the first arms it (showing `armedLabel`) for a few
 * seconds, the second within that time runs `action`.
 */
export function confirmOnSecondClick(
  button: HTMLButtonElement,
  armedLabel: string,
  action: () => void,
): void {
  const label = button.textContent ?? "";
  button.addEventListener("click", () => {
    if (button.dataset.armed) {
      action();
      return;
    }
    button.dataset.armed = "true";
    button.textContent = armedLabel;
    setTimeout(() => {
      delete button.dataset.armed;
      button.textContent = label;
    }, 3000);
  });
}

/** Human-readable byte size. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
