import { describe, expect, it } from "vitest";
import { DIGEST_AFTER_SECONDS } from "../../../src/config/schema.ts";
import { useConfigFiles } from "../../support/config-files.ts";

const { load, problems } = useConfigFiles("countersign-digest-config-");

describe("slack.digest.afterSeconds", () => {
  it("defaults to 30 seconds, whether the block is absent or empty", () => {
    expect(DIGEST_AFTER_SECONDS).toBe(30);
    expect(load("").slack.digest).toBeUndefined();
    expect(load("slack: { digest: {} }\n").slack.digest).toEqual({ afterSeconds: 30 });
  });

  it("takes whole seconds, 0 meaning never", () => {
    expect(load("slack: { digest: { afterSeconds: 0 } }\n").slack.digest).toEqual({ afterSeconds: 0 });
    expect(load("slack: { digest: { afterSeconds: 90 } }\n").slack.digest).toEqual({ afterSeconds: 90 });
  });

  it("refuses what is not a number of seconds, naming the key", () => {
    for (const bad of ["-1", "1.5", '"soon"', "3601"]) {
      expect(problems(`slack: { digest: { afterSeconds: ${bad} } }\n`)).toEqual([{ key: "slack.digest.afterSeconds", message: expect.any(String) }]);
    }
    expect(problems("slack: { digest: { after: 5 } }\n")[0]?.key).toContain("slack.digest");
  });
});
