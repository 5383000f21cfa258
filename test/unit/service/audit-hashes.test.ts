import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { auditChainHash, auditContentDigest, chainGenesis, GENESIS_HASH, planGenesis, SYSTEM_GENESIS } from "../../../src/service/records/audit.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import { sealHash } from "../../../src/service/audit/seal-audit.ts";

const sha = (text: string) => "sha256:" + createHash("sha256").update(text, "utf8").digest("hex");

/** The formulas docs/design.md ("Audit log") gives an outside verifier, checked against the code that writes the log. */
describe("audit hashes as documented", () => {
  const planId = "0b5e7c1a-52f1-4c8e-9a51-3f1f6f0f2d11";
  const event = {
    planId,
    type: "plan.approved",
    actor: { type: "user" as const, userId: "U0ALICE", via: "web" as const },
    data: { approvers: ["U0ALICE"] },
    at: new Date("2026-12-03T07:00:00.000Z"),
  };

  it("each chain starts at its own genesis", () => {
    expect(planGenesis(planId)).toBe(sha(`countersign audit plan ${planId}`));
    expect(chainGenesis(planId)).toBe(planGenesis(planId));
    expect(chainGenesis(null)).toBe(SYSTEM_GENESIS);
    expect(SYSTEM_GENESIS).toBe(sha("countersign audit system"));
    expect(new Set([planGenesis(planId), planGenesis("another"), SYSTEM_GENESIS, GENESIS_HASH]).size).toBe(4);
  });

  it("an event's hash is H(prev_hash + RFC 8785 fingerprint of its content)", () => {
    const content = auditContentDigest(event);
    expect(content).toBe(fingerprint({ planId, type: "plan.approved", actor: event.actor, data: event.data, at: "2026-12-03T07:00:00.000Z" }));
    expect(auditChainHash(planGenesis(planId), content)).toBe(sha(planGenesis(planId) + content));
    expect(auditContentDigest({ ...event, data: { approvers: ["U0MALLORY"] } })).not.toBe(content);
  });

  it("a seal's hash is the SHA-256 of its text: header lines, then one '<id> <hash>' line per event in id order", () => {
    const events = [
      { id: 7, hash: sha("a") },
      { id: 9, hash: sha("b") },
    ];
    const seal = { seq: 3, prevHash: sha("seal 2"), xidFrom: "1000", xidTo: "1042" };
    const text = `countersign audit seal v1\nseq 3\nprev ${sha("seal 2")}\nxids 1000 1042\n7 ${sha("a")}\n9 ${sha("b")}\n`;
    expect(sealHash(seal, events)).toBe(sha(text));
    expect(sealHash(seal, [...events].reverse())).not.toBe(sha(text));
    expect(sealHash({ seq: 0, prevHash: GENESIS_HASH, xidFrom: "0", xidTo: "0" }, [])).toBe(
      sha(`countersign audit seal v1\nseq 0\nprev ${GENESIS_HASH}\nxids 0 0\n`),
    );
  });
});
