export { type AcpBackendOptions, createAcpBackend } from "./backend.js";
