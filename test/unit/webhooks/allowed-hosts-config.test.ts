import { describe, expect, it } from "vitest";
import { useConfigFiles } from "../../support/config-files.ts";

describe("webhooks.allowedHosts in the config file", () => {
  const files = useConfigFiles("countersign-allowed-hosts-");

  it("takes hosts, host:port, [IPv6]:port and wildcards as written", () => {
    const entries = ["hooks.example.com", "localhost:8080", "[::1]:8080", "*.example.com", "*.example.com:8443"];
    expect(files.load(`webhooks: { allowedHosts: ${JSON.stringify(entries)} }\n`).webhooks.allowedHosts).toEqual(entries);
  });

  it("refuses an entry it cannot read at start, naming the key and the entry", () => {
    expect(files.problems('webhooks: { allowedHosts: [localhost, "http://hooks.example.com", "localhost:99999"] }\n')).toEqual([
      { key: "webhooks.allowedHosts.1", message: expect.stringMatching(/^"http:\/\/hooks\.example\.com" is not a host, host:port/) },
      { key: "webhooks.allowedHosts.2", message: '"localhost:99999" names port 99999; a port is 1 to 65535' },
    ]);
  });
});
