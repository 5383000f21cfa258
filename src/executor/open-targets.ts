import type { Adapter, AdapterPlanned, TargetReader, TargetWriter } from "../adapters/adapter.ts";
import type { AdapterRegistry } from "../adapters/registry.ts";

/** One configured target as the executor holds it: its adapter, a reader (read credential) and a writer (write credential). */
export interface OpenTarget {
  adapter: Adapter<any, any, any>;
  reader: TargetReader<unknown, AdapterPlanned>;
  writer: TargetWriter<AdapterPlanned>;
}

export interface OpenTargets {
  /** The target an action names; throws, naming it, when the executor's config has no such target. */
  get(name: string): OpenTarget;
  /** Closes every reader and writer (connection pools); waits for all, whatever fails. */
  close(): Promise<void>;
}

/**
 * Opens every configured target once, through the adapter its config names (`adapter:`): the
 * executor reuses these for every plan and closes them when it stops. An adapter kind the
 * registry does not know is an error here, at start, not at the first plan.
 */
export function openTargets(registry: AdapterRegistry, targets: Record<string, { adapter: string }>): OpenTargets {
  const opened = new Map<string, OpenTarget>();
  try {
    for (const [name, config] of Object.entries(targets)) {
      const adapter = registry.find(config.adapter);
      const reader = adapter.openReader(name, config);
      let writer: TargetWriter<AdapterPlanned>;
      try {
        writer = adapter.openWriter(name, config);
      } catch (err) {
        void reader.close();
        throw err;
      }
      opened.set(name, { adapter, reader, writer });
    }
  } catch (err) {
    void closeAll([...opened.values()]);
    throw err;
  }
  return {
    get(name) {
      const found = opened.get(name);
      if (!found) throw new Error(`target '${name}' is not in the executor's config`);
      return found;
    },
    close: () => closeAll([...opened.values()]),
  };
}

async function closeAll(targets: OpenTarget[]): Promise<void> {
  await Promise.allSettled(targets.flatMap((t) => [t.reader.close(), t.writer.close()]));
}
