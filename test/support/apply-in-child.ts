/**
 * Applies one planned action in a process of its own, so a test can kill it with SIGKILL in the
 * middle of the write (the executor crashing). Reads `{ name, target, planned }` as JSON on
 * stdin, finds the adapter by the planned action's kind, prints the result as JSON.
 */
import { httpJsonAdapter } from "../../src/adapters/http-json-adapter.ts";
import { postgresRowAdapter } from "../../src/adapters/postgres-row/postgres-row-adapter.ts";
import { AdapterRegistry } from "../../src/adapters/registry.ts";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const { name, target, planned } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { name: string; target: unknown; planned: { kind: string } };
const writer = new AdapterRegistry([httpJsonAdapter(), postgresRowAdapter()]).find(planned.kind).openWriter(name, target);
process.stdout.write(`${JSON.stringify(await writer.apply(planned, "crash-test:0"))}\n`);
await writer.close();
