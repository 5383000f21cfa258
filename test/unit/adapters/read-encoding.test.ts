import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReadOnlyHttp } from "../../../src/adapters/read-only-http.ts";

/**
 * The server previews through node:http and the executor re-checks through fetch. A compressing
 * proxy answers a client that accepts gzip with a weakened ETag (as nginx does), so both must ask
 * for the same encoding, or an unchanged document reads as changed and every plan goes stale.
 */
describe("both read clients ask for the same encoding", () => {
  let server: Server;
  let url: URL;
  const seen: (string | undefined)[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      const encoding = req.headers["accept-encoding"];
      seen.push(encoding);
      const gzip = /gzip/.test(encoding ?? "");
      res.writeHead(200, { "content-type": "application/json", etag: gzip ? 'W/"v1"' : '"v1"' });
      res.end(JSON.stringify({ id: 1 }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/contacts/1`);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("node:http (previews) and fetch (the executor) see the same ETag, and neither asks for compression", async () => {
    const viaNode = await createReadOnlyHttp().get(url, {}, 30_000);
    const viaFetch = await createReadOnlyHttp(fetch).get(url, {}, 30_000);
    expect(viaNode.headers.get("etag")).toBe('"v1"');
    expect(viaFetch.headers.get("etag")).toBe('"v1"');
    expect(seen).toEqual(["identity", "identity"]);
  });
});
