import { describe, expect, it } from "vitest";
import { verifyWebhook } from "../../../src/client/webhook-signature.ts";
import { signWebhook } from "../../../src/webhooks/sign-webhook.ts";

const secret = "whsec_test";
const body = '{"planId":"p","status":"approved"}';
const t = 1_767_225_600; // 2026-01-01T00:00:00Z
const at = (seconds: number) => ({ now: new Date(seconds * 1000) });

describe("verifyWebhook (Web Crypto) against the server's signWebhook (node:crypto)", () => {
  const header = signWebhook(secret, body, t);

  it("accepts the server's signature over the exact body, within the tolerance either way", async () => {
    expect(await verifyWebhook(secret, header, body, at(t))).toBe(true);
    expect(await verifyWebhook(secret, header, body, at(t + 300))).toBe(true);
    expect(await verifyWebhook(secret, header, body, at(t - 300))).toBe(true);
    expect(await verifyWebhook(secret, ` ${header.replace(",", " , ")} `, body, at(t))).toBe(true);
  });

  it("refuses another body, secret or timestamp, and a delivery outside the tolerance", async () => {
    expect(await verifyWebhook(secret, header, body + " ", at(t))).toBe(false);
    expect(await verifyWebhook("whsec_other", header, body, at(t))).toBe(false);
    expect(await verifyWebhook(secret, header.replace(`t=${t}`, `t=${t + 1}`), body, at(t))).toBe(false);
    expect(await verifyWebhook(secret, header, body, at(t + 301))).toBe(false);
    expect(await verifyWebhook(secret, header, body, at(t - 301))).toBe(false);
    expect(await verifyWebhook(secret, header, body, { ...at(t + 3000), toleranceSec: 3600 })).toBe(true);
  });

  it.each([
    ["no header", undefined],
    ["an empty header", ""],
    ["no v1", `t=${t}`],
    ["no t", header.replace(/^t=\d+,/, "")],
    ["a t that is not a whole number", header.replace(`t=${t}`, `t=${t}.0`)],
    ["a v1 that is not hex", header.replace(/v1=./, "v1=g")],
    ["a v1 cut short", header.slice(0, -2)],
    ["a v1 of odd length", header.slice(0, -1)],
    ["a v1 with more bytes", header + "00"],
  ])("refuses %s", async (_what, bad) => {
    expect(await verifyWebhook(secret, bad, body, at(t))).toBe(false);
  });
});
