// A tiny Markdown subset for agent text. Parsing yields a plain tree of text
// nodes; rendering builds DOM with createElement/textContent only, so no
// character of agent text is ever parsed as HTML (no innerHTML anywhere).
// Links keep only http(s) and mailto targets; images are shown as links.

/** Inline content. */
export type Inline =
  | { type: "text"; text: string }
  | { type: "code"; text: string }
  | { type: "strong" | "em"; children: Inline[] }
  | { type: "link"; href: string; children: Inline[] }
  | { type: "br" };

/** Block content. */
export type Block =
  | { type: "p"; children: Inline[] }
  | { type: "h"; level: 1 | 2 | 3; children: Inline[] }
  | { type: "pre"; text: string }
  | { type: "ul" | "ol"; items: Inline[][] }
  | { type: "quote"; children: Inline[] };

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);

/** The URL if it is absolute and http(s)/mailto, else null (javascript:, data:, relative…). */
export function safeHref(raw: string): string | null {
  try {
    const url = new URL(raw.trim());
    return SAFE_SCHEMES.has(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s](?:[\s\S]*?[^*\s])?)\*|_([^_\s](?:[\s\S]*?[^_\s])?)_(?![A-Za-z0-9])|!?\[([^\]\n]*)\]\(([^()\s]*)\)|<?(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"])>?/g;

/** Parse inline Markdown (code spans, bold, italics, links, bare URLs, hard breaks). */
export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  const pushText = (s: string) => {
    const lines = s.split("\n");
    lines.forEach((line, i) => {
      if (i > 0) out.push({ type: "br" });
      if (line) out.push({ type: "text", text: line });
    });
  };
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    const index = m.index ?? 0;
    pushText(text.slice(last, index));
    last = index + m[0].length;
    if (m[2] !== undefined) out.push({ type: "code", text: m[2] });
    else if (m[3] !== undefined || m[4] !== undefined)
      out.push({ type: "strong", children: parseInline((m[3] ?? m[4])!) });
    else if (m[5] !== undefined || m[6] !== undefined)
      out.push({ type: "em", children: parseInline((m[5] ?? m[6])!) });
    else if (m[8] !== undefined) {
      const href = safeHref(m[8]);
      const label = parseInline(m[7] || m[8]);
      if (href) out.push({ type: "link", href, children: label });
      else pushText(m[0]);
    } else if (m[9] !== undefined) {
      const href = safeHref(m[9]);
      if (href) out.push({ type: "link", href, children: [{ type: "text", text: m[9] }] });
      else pushText(m[0]);
    }
  }
  pushText(text.slice(last));
  return out;
}

/** Parse a Markdown document into blocks. */
export function parseMarkdown(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let para: string[] = [];
  const flush = () => {
    if (para.length) blocks.push({ type: "p", children: parseInline(para.join("\n")) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      flush();
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i]!.trimStart().startsWith(fence[1]!); i++) body.push(lines[i]!);
      blocks.push({ type: "pre", text: body.join("\n") });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      const level = Math.min(heading[1]!.length, 3) as 1 | 2 | 3;
      blocks.push({ type: "h", level, children: parseInline(heading[2]!) });
      continue;
    }
    const list = /^\s*([-*+]|\d{1,9}[.)])\s+/.exec(line);
    if (list) {
      flush();
      const ordered = /\d/.test(list[1]!);
      const marker = ordered ? /^\s*\d{1,9}[.)]\s+/ : /^\s*[-*+]\s+/;
      const items: Inline[][] = [];
      for (; i < lines.length && marker.test(lines[i]!); i++)
        items.push(parseInline(lines[i]!.replace(marker, "")));
      i--;
      blocks.push({ type: ordered ? "ol" : "ul", items });
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted: string[] = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]!); i++) quoted.push(lines[i]!.replace(/^\s*>\s?/, ""));
      i--;
      blocks.push({ type: "quote", children: parseInline(quoted.join("\n")) });
      continue;
    }
    if (line.trim() === "") flush();
    else para.push(line);
  }
  flush();
  return blocks;
}

function renderInline(doc: Document, nodes: Inline[], parent: Node): void {
  for (const node of nodes) {
    switch (node.type) {
      case "text":
        parent.appendChild(doc.createTextNode(node.text));
        break;
      case "br":
        parent.appendChild(doc.createElement("br"));
        break;
      case "code": {
        const el = doc.createElement("code");
        el.textContent = node.text;
        parent.appendChild(el);
        break;
      }
      case "strong":
      case "em": {
        const el = doc.createElement(node.type);
        renderInline(doc, node.children, el);
        parent.appendChild(el);
        break;
      }
      case "link": {
        const el = doc.createElement("a");
        el.href = node.href;
        el.target = "_blank";
        el.rel = "noopener noreferrer nofollow";
        renderInline(doc, node.children, el);
        parent.appendChild(el);
        break;
      }
    }
  }
}

/** Render Markdown into a fragment of safe DOM nodes. */
export function renderMarkdown(source: string, doc: Document = document): DocumentFragment {
  const fragment = doc.createDocumentFragment();
  for (const block of parseMarkdown(source)) {
    let el: HTMLElement;
    switch (block.type) {
      case "p":
      case "quote":
        el = doc.createElement(block.type === "p" ? "p" : "blockquote");
        renderInline(doc, block.children, el);
        break;
      case "h":
        el = doc.createElement(`h${block.level + 2}`);
        renderInline(doc, block.children, el);
        break;
      case "pre": {
        el = doc.createElement("pre");
        const code = doc.createElement("code");
        code.textContent = block.text;
        el.appendChild(code);
        break;
      }
      case "ul":
      case "ol":
        el = doc.createElement(block.type);
        for (const item of block.items) {
          const li = doc.createElement("li");
          renderInline(doc, item, li);
          el.appendChild(li);
        }
        break;
    }
    fragment.appendChild(el);
  }
  return fragment;
}
