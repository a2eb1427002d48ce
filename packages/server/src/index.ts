export { type AcpBackendOptions, createAcpBackend } from "./agent/acp/index.js";
export type * from "./agent/port.js";
