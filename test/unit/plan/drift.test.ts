import { describe, expect, it } from "vitest";
import { driftOf, preconditionHolds } from "../../../src/plan/drift.ts";
import { fingerprint } from "../../../src/plan/fingerprint.ts";
import type { HttpJsonPlanned as PlannedAction } from "../../../src/plan/schema.ts";

const before = { name: "Ada", email: "a@example.com" };
const action = (precondition: PlannedAction["precondition"]): PlannedAction => ({
  kind: "http.json",
  target: "crm",
  path: "/customers/1",
  op: "merge",
  body: { name: "Ada L." },
  precondition,
  beforeDigest: fingerprint(before),
  afterDigest: fingerprint({ ...before, name: "Ada L." }),
});

describe("the drift rule", () => {
  it("holds while the ETag, digest or absence is what the preview saw", () => {
    expect(preconditionHolds({ etag: '"v1"' }, { exists: true, body: before, etag: '"v1"' })).toBe(true);
    expect(preconditionHolds({ digest: fingerprint(before) }, { exists: true, body: before, etag: null })).toBe(true);
    expect(preconditionHolds({ absent: true }, { exists: false })).toBe(true);
    expect(driftOf(action({ etag: '"v1"' }), 0, before, { exists: true, body: before, etag: '"v1"' })).toBeUndefined();
  });

  it("fails on a new ETag, a different body under digest, something created or deleted", () => {
    expect(preconditionHolds({ etag: '"v1"' }, { exists: true, body: before, etag: '"v2"' })).toBe(false);
    expect(preconditionHolds({ etag: '"v1"' }, { exists: false })).toBe(false);
    expect(preconditionHolds({ digest: fingerprint(before) }, { exists: true, body: { ...before, email: "b@example.com" }, etag: null })).toBe(false);
    expect(preconditionHolds({ absent: true }, { exists: true, body: {}, etag: '"v1"' })).toBe(false);
  });

  it("says what changed since the preview, field by field, with the versions expected and found", () => {
    const now = { ...before, email: "b@example.com" };
    expect(driftOf(action({ etag: '"v1"' }), 2, before, { exists: true, body: now, etag: '"v2"' })).toEqual({
      index: 2,
      target: "crm",
      path: "/customers/1",
      status: "stale",
      detail: "crm /customers/1 changed since the preview",
      expected: '"v1"',
      now: '"v2"',
      changedSincePreview: [{ path: "/email", from: "a@example.com", to: "b@example.com" }],
    });
    // Under `digest` the versions are digests; a deleted resource is `now: null`, one whole-document change.
    const gone = driftOf(action({ digest: fingerprint(before) }), 0, before, { exists: false });
    expect(gone).toMatchObject({ expected: fingerprint(before), now: null, changedSincePreview: [{ path: "", from: before }] });
    const digestNow = driftOf(action({ digest: fingerprint(before) }), 0, before, { exists: true, body: now, etag: null });
    expect(digestNow?.now).toBe(fingerprint(now));
  });

  it("reports at most 200 changes", () => {
    const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`f${i}`, i]));
    const stale = driftOf(action({ etag: '"v1"' }), 0, {}, { exists: true, body: wide, etag: '"v2"' });
    expect(stale?.changedSincePreview).toHaveLength(200);
  });
});
