import { frameText } from "./format.js";
import { runCheck, selectChecks } from "./runner.js";
import type { ConformanceOptions } from "./types.js";

type Body = (context: { skip: (note?: string) => void }) => Promise<void>;

/** The `describe`/`it` pair of vitest (`import { describe, it } from "vitest"`). */
export interface VitestApi {
  describe(name: string, body: () => void): void;
  it(name: string, body: Body, timeout?: number): void;
}

/** The `describe`/`it` pair of node:test (`import { describe, it } from "node:test"`). */
export interface NodeTestApi {
  describe(name: string, body: () => void): unknown;
  it(name: string, options: { timeout?: number }, body: Body): unknown;
}

type Options = ConformanceOptions | (() => ConformanceOptions);

/** One test body per check: runs it, skips with its reason, or throws with the reason and offending frame. */
function body(id: string, options: Options): Body {
  return async (context) => {
    const resolved = typeof options === "function" ? options() : options;
    const check = selectChecks({ only: [id] })[0]!;
    const result = await runCheck(check, resolved);
    if (result.status === "skip") return context.skip(result.reason);
    if (result.status === "fail") {
      const frame = result.frame === undefined ? "" : `\noffending frame: ${frameText(result.frame)}`;
      throw new Error(`${result.reason} [spec: ${result.section}]${frame}`);
    }
  };
}

/**
 * Register the conformance suite as vitest tests, one `it` per check. Pass
 * options as a function when the server starts in a `beforeAll`.
 *
 * ```ts
 * import { describe, it } from "vitest";
 * conformanceForVitest({ describe, it }, () => ({ url, secret }));
 * ```
 */
export function conformanceForVitest(api: VitestApi, options: Options, timeoutMs = 120_000): void {
  api.describe("Pheby Protocol v1 conformance", () => {
    for (const check of selectChecks(typeof options === "function" ? {} : options))
      api.it(`${check.id}: ${check.title}`, body(check.id, options), timeoutMs);
  });
}

/**
 * Register the conformance suite as node:test tests, one `it` per check.
 *
 * ```ts
 * import { describe, it } from "node:test";
 * conformanceForNodeTest({ describe, it }, { url, secret });
 * ```
 */
export function conformanceForNodeTest(api: NodeTestApi, options: Options, timeoutMs = 120_000): void {
  api.describe("Pheby Protocol v1 conformance", () => {
    for (const check of selectChecks(typeof options === "function" ? {} : options))
      api.it(`${check.id}: ${check.title}`, { timeout: timeoutMs }, body(check.id, options));
  });
}
