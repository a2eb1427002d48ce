import { type Command, EXIT, required } from "../command.js";
import { UsageError } from "../exit.js";
import { writeJson, writeLine } from "../io.js";

/**
 * `pheby push`: the server's push subscriptions (the `push` extension). Subscribing is the phone's
 * or the browser's job (it holds the keys); the CLI lists, tests and removes.
 */
export const push: Command = {
  name: "push",
  usage: "[list | test <subscription> | remove <subscription>]",
  summary:
    "List, test and remove push subscriptions. A test sends one notification and prints the push service's answer.",
  examples: [
    "pheby push",
    "pheby push test 0f3c9a1e5b7d4c2a8e6f1b3d5c7a9e0f",
    "pheby push remove 0f3c9a1e5b7d4c2a8e6f1b3d5c7a9e0f",
  ],
  async run({ positionals, flags, io, connect }) {
    const [action = "list", ...rest] = positionals;
    const json = flags.json === true;
    const client = await connect();
    switch (action) {
      case "list": {
        const subscriptions = await client.listPush();
        if (json) for (const s of subscriptions) writeJson(io, s);
        else if (subscriptions.length === 0) writeLine(io, "No push subscriptions.");
        else
          for (const s of subscriptions) {
            const state = s.last_error
              ? `last error: ${s.last_error}`
              : `last success: ${s.last_success_at ?? "never"}`;
            writeLine(
              io,
              `${s.subscription_id}  ${s.endpoint_origin}  ${s.device_name ?? "-"}  [${s.events.join(",")}]  ${state}`,
            );
          }
        return EXIT.ok;
      }
      case "test": {
        const tested = await client.testPush(required(rest, 0, "<subscription>"));
        if (json)
          writeJson(io, {
            subscription_id: tested.subscription_id,
            ok: tested.ok,
            status: tested.status,
            error: tested.error,
          });
        else writeLine(io, tested.ok ? "delivered" : "not delivered");
        return tested.ok ? EXIT.ok : EXIT.failed;
      }
      case "remove": {
        const id = required(rest, 0, "<subscription>");
        await client.unsubscribePush(id);
        if (json) writeJson(io, { subscription_id: id, removed: true });
        else writeLine(io, `removed ${id}`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown action "${action}" (list, test, remove)`);
    }
  },
};
