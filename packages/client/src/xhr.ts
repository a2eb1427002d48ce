import type { ProgressCallback } from "./files.js";

/** True where XMLHttpRequest exists (browsers, web workers); false in Node. */
export function hasXhr(): boolean {
  return typeof (globalThis as { XMLHttpRequest?: unknown }).XMLHttpRequest === "function";
}

/**
 * POST a Blob with XMLHttpRequest and resolve with the answer as a fetch
 * `Response`. Browsers need this for uploads: Chromium refuses a streamed
 * fetch body over HTTP/1.1 (it requires HTTP/2), and fetch reports no upload
 * progress, while XHR sends a Blob over any HTTP version with progress events.
 */
export function xhrPost(
  url: string,
  headers: Record<string, string>,
  body: Blob,
  onProgress?: ProgressCallback,
  signal?: AbortSignal,
): Promise<Response> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new DOMException("aborted", "AbortError"));
      return;
    }
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    // The browser computes Content-Length itself and refuses to let scripts set it.
    for (const [name, value] of Object.entries(headers))
      if (name !== "content-length") xhr.setRequestHeader(name, value);
    if (onProgress)
      xhr.upload.addEventListener("progress", (e) =>
        onProgress(e.loaded, e.lengthComputable ? e.total : body.size),
      );
    xhr.addEventListener("load", () => {
      resolve(
        new Response(xhr.responseText, {
          status: xhr.status,
          headers: { "content-type": xhr.getResponseHeader("content-type") ?? "application/json" },
        }),
      );
    });
    xhr.addEventListener("error", () => reject(new TypeError("upload failed (network error)")));
    xhr.addEventListener("abort", () => reject(signal?.reason ?? new DOMException("aborted", "AbortError")));
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(body);
  });
}
