import { describe, expect, it } from "vitest";
import { FLOW_TTL_SECONDS, flowStateKey, openFlowState, safeReturnPath, sealFlowState } from "../../../src/service/sign-in/oidc-flow-state.ts";

const FLOW = { state: "s".repeat(43), nonce: "n".repeat(43), codeVerifier: "v".repeat(43), returnTo: "/plans/1" };
const NOW = new Date("2026-12-02T12:00:00Z");
const later = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);

describe("OIDC flow state", () => {
  it("round-trips, and the verifier is not readable in the sealed value", async () => {
    const key = flowStateKey("client-secret");
    const sealed = await sealFlowState(key, FLOW, NOW);
    expect(sealed).not.toContain(Buffer.from(FLOW.codeVerifier).toString("base64url").slice(0, 20));
    expect(await openFlowState(key, sealed, later(FLOW_TTL_SECONDS - 1))).toEqual(FLOW);
  });

  it("is nothing once expired, under another client secret, tampered with, or absent", async () => {
    const key = flowStateKey("client-secret");
    const sealed = await sealFlowState(key, FLOW, NOW);
    expect(await openFlowState(key, sealed, later(FLOW_TTL_SECONDS + 1))).toBeUndefined();
    expect(await openFlowState(flowStateKey("another-secret"), sealed, NOW)).toBeUndefined();
    const parts = sealed.split(".");
    parts[3] = (parts[3]!.startsWith("A") ? "B" : "A") + parts[3]!.slice(1);
    expect(await openFlowState(key, parts.join("."), NOW)).toBeUndefined();
    expect(await openFlowState(key, "not-a-jwe", NOW)).toBeUndefined();
    expect(await openFlowState(key, undefined, NOW)).toBeUndefined();
  });
});

describe("safeReturnPath", () => {
  it.each([
    ["/plans/abc", "/plans/abc"],
    ["/plans?status=pending#top", "/plans?status=pending#top"],
    ["/plans/../admin", "/admin"],
  ])("keeps a path on this server: %s", (raw, expected) => {
    expect(safeReturnPath(raw)).toBe(expected);
  });

  it.each([
    undefined,
    "",
    "plans",
    "//evil.example/x",
    "/\\evil.example",
    "https://evil.example/",
    "/plans\nSet-Cookie: x=1",
    "/auth/slack/callback?code=x",
    "javascript:alert(1)",
  ])("sends anything else to /plans: %s", (raw) => {
    expect(safeReturnPath(raw)).toBe("/plans");
  });
});
