/** `mapLimit`: the results in the items' order, never more than the limit of calls in flight. */
import { describe, expect, it } from "vitest";
import { mapLimit } from "../src/util/map-limit.js";

describe("mapLimit", () => {
  it("keeps the items' order when later calls finish first, with at most `limit` in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const items = Array.from({ length: 20 }, (_, i) => i);
    const results = await mapLimit(items, 3, async (item, index) => {
      inFlight++;
      most = Math.max(most, inFlight);
      // Earlier items wait longer: they finish after later ones (ticks, not time).
      for (let tick = 0; tick < 20 - item; tick++) await Promise.resolve();
      inFlight--;
      return `${item}:${index}`;
    });
    expect(results).toEqual(items.map((i) => `${i}:${i}`));
    expect(most).toBe(3);
  });

  it("maps nothing to nothing, and rejects with a call's rejection", async () => {
    expect(await mapLimit([], 8, async () => 1)).toEqual([]);
    await expect(
      mapLimit([1, 2, 3], 2, async (n) => {
        if (n === 2) throw new Error("two");
        return n;
      }),
    ).rejects.toThrow("two");
  });
});
