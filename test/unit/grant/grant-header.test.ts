import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeyId } from "../../../src/contract/executor-api.ts";
import { grantHeaderSegment, issueGrant, unverifiedKidOf } from "../../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, publicKeyFingerprint } from "../../../src/grant/keys.ts";

/** What the server reads from a stored grant without verifying it: which key signed it, and the key's fingerprint for people. */

const input = () => ({
  planId: randomUUID(),
  planHash: `sha256:${"ab".repeat(32)}`,
  approvers: [{ user: "U0ALICE", via: "slack" as const, at: "2026-01-01T00:00:00.000Z" }],
  environment: "test",
  issuedAt: new Date("2026-01-01T00:00:00Z"),
  expiresAt: new Date("2026-01-01T00:10:00Z"),
});

describe("a grant's header names its key the same way every time", () => {
  it("every grant a key signs starts with grantHeaderSegment(kid), and another key's does not", async () => {
    const [a, b] = await Promise.all([generateGrantKeys(), generateGrantKeys()]);
    const keyA = await loadSigningKey(a.privatePem);
    const keyB = await loadSigningKey(b.privatePem);
    for (let i = 0; i < 3; i++) expect((await issueGrant(keyA, input())).token.split(".")[0]).toBe(grantHeaderSegment(keyA.kid));
    expect((await issueGrant(keyB, input())).token.split(".")[0]).not.toBe(grantHeaderSegment(keyA.kid));
    const token = (await issueGrant(keyA, input())).token;
    expect(unverifiedKidOf(token)).toBe(keyA.kid);
    expect(unverifiedKidOf("not a token")).toBeUndefined();
  });

  it("a kid is a 43-character base64url thumbprint, as the executor API says", async () => {
    const { kid } = await generateGrantKeys();
    expect(KeyId.safeParse(kid).success).toBe(true);
    expect(KeyId.safeParse(`${kid}x`).success).toBe(false);
  });
});

describe("publicKeyFingerprint", () => {
  it("is the SHA-256 of the SPKI DER (the public PEM's body), as `openssl pkey -pubin -outform DER | sha256sum` prints it", async () => {
    const pair = await generateGrantKeys();
    const signing = await loadSigningKey(pair.privatePem);
    const der = Buffer.from(pair.publicPem.replace(/-----[A-Z ]+-----/g, "").replace(/\s/g, ""), "base64");
    expect(publicKeyFingerprint(signing.key)).toBe(`sha256:${createHash("sha256").update(der).digest("hex")}`);
  });
});
