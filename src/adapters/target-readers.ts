import type { Adapter, AdapterAction, AdapterPlanned, TargetReader } from "./adapter.ts";
import type { AdapterRegistry } from "./registry.ts";

/** A configured target as far as opening it goes: which adapter reaches it (the rest is that adapter's config). */
export interface ConfiguredTarget {
  adapter: string;
}

/**
 * The server's way to reach targets: one reader per configured target, opened once
 * at start from `config.targets` with the READ credential only (an adapter's reader never holds
 * the write block, and the server's config has none to give), closed at stop. Submit previews
 * through it; the Approve re-check and the watcher revalidate through it.
 */
export interface TargetReaders {
  /** The adapter of a kind; an unknown kind is an error naming it and the kinds there are. */
  adapterFor(kind: string): Adapter<any, any, any>;
  /** The adapter a configured target uses, with its config block (as parsed by that adapter's targetSchema). */
  targetOf(targetName: string): { adapter: Adapter<any, any, any>; config: ConfiguredTarget };
  /** The target's reader; an unknown target is an error naming it and the targets there are. */
  readerFor(targetName: string): TargetReader<AdapterAction, AdapterPlanned>;
  /** The registry the readers came from (kinds, for errors that list them). */
  readonly registry: AdapterRegistry;
  /** Closes every reader (connection pools); safe to call twice. */
  close(): Promise<void>;
}

export class UnknownTargetError extends Error {
  constructor(
    readonly target: string,
    readonly known: readonly string[],
  ) {
    super(`target '${target}' is not configured; known targets: ${known.length ? known.join(", ") : "(none)"}`);
    this.name = "UnknownTargetError";
  }
}

/**
 * Opens a reader for every target. A target whose `adapter` is not registered is an error naming
 * the target and the kinds there are (config validation refuses it first; this guards code that
 * builds configs itself). Opening a reader connects nothing yet: pools connect on first use.
 */
export function openTargetReaders(targets: Readonly<Record<string, ConfiguredTarget>>, registry: AdapterRegistry): TargetReaders {
  const opened = new Map<string, { adapter: Adapter<any, any, any>; config: ConfiguredTarget; reader: TargetReader<AdapterAction, AdapterPlanned> }>();
  try {
    for (const [name, config] of Object.entries(targets)) {
      if (!registry.has(config.adapter))
        throw new Error(`targets.${name}.adapter: no adapter of kind '${config.adapter}'; known kinds: ${registry.kinds().join(", ")}`);
      const adapter = registry.find(config.adapter);
      opened.set(name, { adapter, config, reader: adapter.openReader(name, config) });
    }
  } catch (err) {
    for (const { reader } of opened.values()) void reader.close().catch(() => undefined);
    throw err;
  }
  const known = () => [...opened.keys()].sort();
  const entry = (name: string) => {
    const found = opened.get(name);
    if (!found) throw new UnknownTargetError(name, known());
    return found;
  };
  let closing: Promise<void> | undefined;
  return {
    registry,
    adapterFor: (kind) => registry.find(kind),
    targetOf: (name) => {
      const { adapter, config } = entry(name);
      return { adapter, config };
    },
    readerFor: (name) => entry(name).reader,
    close() {
      closing ??= Promise.allSettled([...opened.values()].map(({ reader }) => reader.close())).then(() => undefined);
      return closing;
    },
  };
}
