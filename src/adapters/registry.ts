import type { Adapter } from "./adapter.ts";
import { httpJsonAdapter } from "./http-json-adapter.ts";
import { postgresRowAdapter } from "./postgres-row/postgres-row-adapter.ts";
import type { ReadOnlyHttp } from "./read-only-http.ts";

/** Adapters by kind. Built once at start and passed where targets are reached (not a global). */
export class AdapterRegistry {
  private readonly byKind = new Map<string, Adapter<any, any, any>>();

  constructor(adapters: Adapter<any, any, any>[] = []) {
    for (const adapter of adapters) this.register(adapter);
  }

  register(adapter: Adapter<any, any, any>): this {
    if (this.byKind.has(adapter.kind)) throw new Error(`adapter '${adapter.kind}' is registered twice`);
    this.byKind.set(adapter.kind, adapter);
    return this;
  }

  /** The adapter for `kind`, or an error naming it and the kinds there are. */
  find(kind: string): Adapter<any, any, any> {
    const adapter = this.byKind.get(kind);
    if (!adapter)
      throw new Error(
        `no adapter of kind '${kind}'; known kinds: ${
          this.kinds()
            .map((k) => `'${k}'`)
            .join(", ") || "none"
        }`,
      );
    return adapter;
  }

  has(kind: string): boolean {
    return this.byKind.has(kind);
  }

  kinds(): string[] {
    return [...this.byKind.keys()].sort();
  }
}

/**
 * Every adapter Countersign ships, as the server, the executor and `policy check` use them.
 * `http`/`fetch` reach http.json targets (tests pass their own).
 */
export function defaultRegistry(deps: { fetch?: typeof fetch; http?: ReadOnlyHttp } = {}): AdapterRegistry {
  return new AdapterRegistry([httpJsonAdapter(deps), postgresRowAdapter()]);
}
