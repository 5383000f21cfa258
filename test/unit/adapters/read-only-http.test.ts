import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createReadOnlyHttp } from "../../../src/adapters/read-only-http.ts";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function target(handle: Parameters<typeof createServer>[1]): Promise<URL> {
  server = createServer(handle);
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/doc`);
}

describe("the read-only HTTP capability", () => {
  it("answers a GET sent on a kept-alive connection the target closed meanwhile (undici #3492)", async () => {
    const url = await target((_, res) => res.end('{"ok":true}'));
    const http = createReadOnlyHttp();
    const failures: unknown[] = [];
    // Closing the idle connection right after an answer makes the next GET take it from the
    // pool as it closes: without the second send, about half of these failed with "other side closed".
    for (let i = 0; i < 20; i++) {
      await http.get(url, {}, 10_000);
      server!.closeIdleConnections();
      await http.get(url, {}, 10_000).then(
        (answer) => expect(answer.text).toBe('{"ok":true}'),
        (err: unknown) => failures.push(err),
      );
    }
    expect(failures).toEqual([]);
  });

  it("sends a GET at most twice when the target closes the connection every time", async () => {
    let received = 0;
    const url = await target((req) => {
      received++;
      req.socket.destroy();
    });
    const err = await createReadOnlyHttp()
      .get(url, {}, 10_000)
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: { code?: string } },
      );
    expect(err?.message).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+ failed$/);
    expect(["ECONNRESET", "UND_ERR_SOCKET"]).toContain(err?.cause?.code);
    expect(received).toBe(2);
  });

  it("does not send again when the target refuses the connection", async () => {
    const url = await target((_, res) => res.end());
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    let sent = 0;
    const counting: typeof fetch = (input, init) => (sent++, fetch(input, init));
    const err = await createReadOnlyHttp(counting)
      .get(url, {}, 10_000)
      .then(
        () => undefined,
        (e: unknown) => e as Error & { cause?: { code?: string } },
      );
    expect(err?.cause?.code).toBe("ECONNREFUSED");
    expect(sent).toBe(1);
  });
});
