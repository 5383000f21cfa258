import { httpJsonAdapter } from "./http-json-adapter.ts";
import { postgresRowAdapter } from "./postgres-row/postgres-row-adapter.ts";
import { AdapterRegistry } from "./registry.ts";

/** The adapters Countersign ships, registered by kind: what a process builds once at start. */
export function builtInRegistry(deps: { fetch?: typeof fetch } = {}): AdapterRegistry {
  return new AdapterRegistry([httpJsonAdapter(deps), postgresRowAdapter()]);
}
