export type * from "./agent/port.js";
