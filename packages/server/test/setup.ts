import { afterEach, expect } from "vitest";
import { violations } from "./helpers.js";

// Every frame received in any test is validated against ServerMessage (test/helpers.ts).
afterEach(() => {
  const found = violations.splice(0);
  expect(found, "server frames rejected by @pheby/protocol ServerMessage").toEqual([]);
});
