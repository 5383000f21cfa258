import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Claim, GrantKeys } from "../../../src/contract/executor-api.ts";
import { runExecutor } from "../../../src/executor/run-executor.ts";
import type { ExecutorServer } from "../../../src/executor/server-client.ts";
import { grantHeaderSegment } from "../../../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys, publicKeyFingerprint } from "../../../src/grant/keys.ts";
import { silentLogger, testGrantKeys } from "../../support/harness.ts";
import { waitFor } from "../../support/wait-for.ts";

/**
 * The executor asks the server which keys it signs grants with before its first claim and after
 * every failed call, and stops, in one line naming COUNTERSIGN_GRANT_PUBLIC_KEY, when it holds
 * none of them. Each claim names the key ids it holds.
 */

async function serverKeys(): Promise<{ kid: string; keys: GrantKeys; publicPem: string }> {
  const pair = await generateGrantKeys();
  const signing = await loadSigningKey(pair.privatePem);
  return { kid: signing.kid, keys: { keys: [{ kid: signing.kid, fingerprint: publicKeyFingerprint(signing.key) }] }, publicPem: pair.publicPem };
}

/** An in-memory server: answers `keys` from a list (an Error is thrown), and claims with what `claim` says. */
function fakeServer(keys: (GrantKeys | undefined | Error)[], claim: (n: number, kids: readonly string[], signal?: AbortSignal) => Promise<Claim | undefined>) {
  const calls: string[] = [];
  let claims = 0;
  const server: ExecutorServer = {
    async keys() {
      calls.push("keys");
      const next = keys.length > 1 ? keys.shift() : keys[0];
      if (next instanceof Error) throw next;
      return next;
    },
    claim(kids, signal) {
      calls.push(`claim ${kids.join(",")}`);
      return claim(++claims, kids, signal);
    },
    heartbeat: async () => true,
    async report() {
      calls.push("report");
      return true;
    },
  };
  return { server, calls };
}

const idle = (signal?: AbortSignal) =>
  new Promise<undefined>((resolve) => (signal?.aborted ? resolve(undefined) : signal?.addEventListener("abort", () => resolve(undefined), { once: true })));

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

describe("runExecutor checks its grant public key against the server's", () => {
  it("refuses at once, in one line naming COUNTERSIGN_GRANT_PUBLIC_KEY and both key ids, when it holds none of the server's keys; it claims nothing", async () => {
    const ours = (await testGrantKeys()).verifying;
    const theirs = await serverKeys();
    const fake = fakeServer([theirs.keys], async () => undefined);
    const executor = runExecutor({ server: fake.server, keys: ours, environment: "test", targets: {}, logger: silentLogger });
    const why = await executor.refused;
    await executor.done;
    const ourKid = [...ours.byKid.keys()][0]!;
    expect(why).toMatch(/^COUNTERSIGN_GRANT_PUBLIC_KEY: /);
    expect(why).toContain(`\`${ourKid}\``);
    expect(why).toContain(`\`${theirs.kid}\` (${theirs.keys.keys[0]!.fingerprint})`);
    expect(why).not.toContain("\n");
    expect(fake.calls).toEqual(["keys"]);
  });

  it("names every key it holds in each claim, and starts with either key of a rotation", async () => {
    const theirs = await serverKeys();
    const rotating = await loadVerifyingKeys((await generateGrantKeys()).publicPem + theirs.publicPem);
    expect(rotating.byKid.size).toBe(2);
    const fake = fakeServer([theirs.keys], (_n, _kids, signal) => idle(signal));
    const executor = runExecutor({ server: fake.server, keys: rotating, environment: "test", targets: {}, logger: silentLogger });
    await waitFor("the first claim", () => fake.calls.length >= 2);
    await executor.stop();
    expect(fake.calls).toEqual(["keys", `claim ${[...rotating.byKid.keys()].join(",")}`]);
  });

  it("checks again after the server was unreachable, and refuses if it came back with another key", async () => {
    const ours = await testGrantKeys();
    const same = { keys: [{ kid: ours.signing.kid, fingerprint: publicKeyFingerprint(ours.signing.key) }] };
    const other = await serverKeys();
    const down = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    // Up with the right key; then a claim fails (the server went away) and the next check fails too; then it is back with another key.
    const fake = fakeServer([same, down, other.keys], async (n) => {
      if (n === 1) throw down;
      return undefined;
    });
    const executor = runExecutor({ server: fake.server, keys: ours.verifying, environment: "test", targets: {}, logger: silentLogger });
    const why = await executor.refused;
    await executor.done;
    expect(why).toContain(`\`${other.kid}\``);
    expect(fake.calls).toEqual(["keys", `claim ${ours.signing.kid}`, "keys", "keys"]);
  });

  it("runs on, saying it cannot check, against a server that does not publish its keys", async () => {
    const { logger, lines } = capturingLogger();
    const fake = fakeServer([undefined], (_n, _kids, signal) => idle(signal));
    const executor = runExecutor({ server: fake.server, keys: (await testGrantKeys()).verifying, environment: "test", targets: {}, logger });
    await waitFor("the first claim", () => fake.calls.length >= 2);
    await executor.stop();
    expect(fake.calls[0]).toBe("keys");
    expect(lines.some((l) => l.level === 40 && String(l.msg).includes("COUNTERSIGN_GRANT_PUBLIC_KEY"))).toBe(true);
  });

  it("leaves a plan whose grant another key signed to its lease (never reports it failed), logs why naming the variable, and checks the keys again", async () => {
    const ours = await testGrantKeys();
    const same = { keys: [{ kid: ours.signing.kid, fingerprint: publicKeyFingerprint(ours.signing.key) }] };
    const other = await serverKeys();
    const claim = {
      plan: { id: "7b0c2a4e-3f51-4d7c-9a8e-2b6f1c0d9e11", actions: [] },
      preview: { actions: [] },
      grant: `${grantHeaderSegment(other.kid)}.e30.c2ln`,
      claimToken: "t1",
      leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    } as unknown as Claim;
    const { logger, lines } = capturingLogger();
    const fake = fakeServer([same], async (n, _kids, signal) => (n === 1 ? claim : idle(signal)));
    const executor = runExecutor({ server: fake.server, keys: ours.verifying, environment: "test", targets: {}, logger });
    await waitFor("the next claim", () => fake.calls.filter((c) => c.startsWith("claim")).length >= 2);
    await executor.stop();
    expect(fake.calls).toEqual(["keys", `claim ${ours.signing.kid}`, "keys", `claim ${ours.signing.kid}`]);
    const error = lines.find((l) => l.level === 50);
    expect(error?.msg).toContain(`\`${other.kid}\``);
    expect(error?.msg).toContain("COUNTERSIGN_GRANT_PUBLIC_KEY");
  });
});
