import { afterEach, describe, expect, it } from "vitest";
import { JsonResourceServer } from "../../../src/demo/json-resource-server.ts";

describe("JsonResourceServer keep-alive", () => {
  let server: JsonResourceServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  const announced = async (s: JsonResourceServer) => {
    const url = await s.start();
    const res = await fetch(`${url}/contacts/1`);
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    return res.headers.get("keep-alive");
  };

  it("announces node's 5 s by default", async () => {
    server = new JsonResourceServer({ seed: { "/contacts/1": { name: "Ana" } } });
    expect(await announced(server)).toBe("timeout=5");
  });

  it("keeps idle connections as long as keepAliveTimeoutMs says, and announces it (fetch keeps them that long, less 1 s)", async () => {
    server = new JsonResourceServer({ seed: { "/contacts/1": { name: "Ana" } }, keepAliveTimeoutMs: 65_000 });
    expect(await announced(server)).toBe("timeout=65");
  });
});
