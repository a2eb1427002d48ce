/**
 * The agent's thinking reaches `thoughts` connections without the server's own paths, as tool text
 * does (docs/security.md): models think aloud about the files they read (`/srv/pheby/data/…`).
 */
import { type HostPaths, StreamScrubber } from "../../util/host-paths.js";
import type { TurnSink } from "../port.js";

/**
 * `sink` with its thought chunks scrubbed as they stream ({@link StreamScrubber}: a path split across
 * chunks is still replaced, and a thought's text only grows). The tail a chunk leaves waiting goes out
 * before any other report of the turn (answer text, a tool call, a question…), which may end the thought
 * on the server, and at {@link flush}, which the turn calls when it ends.
 */
export function scrubThoughts(sink: TurnSink, paths: HostPaths): { sink: TurnSink; flush(): void } {
  const stream = new StreamScrubber(paths);
  const flush = () => {
    const rest = stream.end();
    if (rest) sink.thought(rest);
  };
  const thought = (chunk: string) => {
    const ready = stream.push(chunk);
    if (ready) sink.thought(ready);
  };
  // A proxy rather than a copy of each method: every report of the sink, present and future, releases
  // the waiting tail first, so a thought never reaches the server after what followed it.
  const scrubbed = new Proxy(sink, {
    get(target, prop, receiver) {
      if (prop === "thought") return thought;
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (stream.holding) flush();
        return value.apply(target, args);
      };
    },
  });
  return { sink: scrubbed, flush };
}
