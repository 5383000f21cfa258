/**
 * What signing and verifying a grant costs (issue 13, approve latency): jose on WebCrypto (the
 * grant code before 2026-12-03, kept here as the reference) against `issueGrant`/`verifyGrant` as
 * they are in src/, the bare node:crypto Ed25519 sign/verify underneath and the claims schema
 * (zod) that verifying runs either way. Cold = the operation after IDLE_MS of idle (an approve
 * click comes ~5 s after the last); warm = back to back. Then the executor's step as in
 * execute-plan.ts: the first revalidating GET (kept-alive loopback node:http) started before the
 * grant check and awaited after it, with jose's check (async, off-thread) and with verifyGrant
 * (synchronous, so it runs before the GET's next tick), and the GET alone.
 *   node --import tsx bench/grant-crypto.ts [ROUNDS] [IDLE_MS]      (default 8 rounds, 2000 ms)
 */
import http from "node:http";
import { createPrivateKey, createPublicKey, randomUUID, sign, verify } from "node:crypto";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { importPKCS8, importSPKI, jwtVerify, SignJWT } from "jose";
import { GrantClaims, grantAudience, issueGrant, verifyGrant, type GrantInput } from "../src/grant/grant.ts";
import { generateGrantKeys, loadSigningKey, loadVerifyingKeys } from "../src/grant/keys.ts";
import { fingerprint } from "../src/plan/fingerprint.ts";
import { percentile } from "./figure.ts";

const ROUNDS = Number(process.argv[2] ?? 8);
const IDLE_MS = Number(process.argv[3] ?? 2000);
const WARM = 500;

const pair = await generateGrantKeys();
const signing = await loadSigningKey(pair.privatePem);
const verifying = await loadVerifyingKeys(pair.publicPem);
const joseSigning = await importPKCS8(pair.privatePem, "EdDSA");
const joseVerifying = await importSPKI(pair.publicPem, "EdDSA");
const nodePrivate = createPrivateKey(pair.privatePem);
const nodePublic = createPublicKey(pair.publicPem);

const now = new Date();
const input: GrantInput = {
  planId: randomUUID(),
  planHash: fingerprint({ plan: "bench" }),
  approvers: [{ user: "U0BENCH", via: "slack", at: now.toISOString() }],
  environment: "bench",
  issuedAt: now,
  expiresAt: new Date(now.getTime() + 600_000),
};
const token = (await issueGrant(signing, input)).token;
const [h, p, s] = token.split(".") as [string, string, string];
const signingInput = Buffer.from(`${h}.${p}`);
const signature = Buffer.from(s, "base64url");
const payload: unknown = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));

/** The grant code before node:crypto: SignJWT, and jwtVerify with the same options, then zod. */
async function joseIssue(): Promise<string> {
  return new SignJWT({ planHash: input.planHash, approvers: input.approvers })
    .setProtectedHeader({ alg: "EdDSA", kid: signing.kid, typ: "countersign-grant+jwt" })
    .setSubject(input.planId)
    .setAudience(grantAudience(input.environment))
    .setIssuedAt(Math.floor(input.issuedAt.getTime() / 1000))
    .setExpirationTime(Math.floor(input.expiresAt.getTime() / 1000))
    .setJti(randomUUID())
    .sign(joseSigning);
}
async function joseVerify(): Promise<boolean> {
  const { payload } = await jwtVerify(token, () => joseVerifying, {
    algorithms: ["EdDSA"],
    audience: grantAudience("bench"),
    typ: "countersign-grant+jwt",
    requiredClaims: ["sub", "exp", "iat", "jti"],
    currentDate: new Date(),
  });
  return GrantClaims.safeParse(payload).success;
}

const ops: Record<string, () => Promise<unknown> | unknown> = {
  "jose sign (SignJWT)": joseIssue,
  "src issueGrant": () => issueGrant(signing, input),
  "node:crypto sign (bare)": () => sign(null, signingInput, nodePrivate),
  "jose verify (jwtVerify+zod)": joseVerify,
  "src verifyGrant": async () => {
    const check = await verifyGrant(verifying, token, "bench", new Date());
    if (!check.ok) throw new Error(check.reason);
  },
  "node:crypto verify (bare)": () => {
    if (!verify(null, signingInput, nodePublic, signature)) throw new Error("bad signature");
  },
  "zod GrantClaims (in both)": () => {
    if (!GrantClaims.safeParse(payload).success) throw new Error("bad claims");
  },
};

const target = http.createServer((_req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ id: 1, email: "old@example.com", name: "x".repeat(200) }));
});
target.keepAliveTimeout = 65_000; // as the bench's target: the GET reuses its connection
await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(target.address() as { port: number }).port}/crm/1`;
const get = async (): Promise<unknown> => (await fetch(url)).json();
const steps: Record<string, () => Promise<unknown>> = {
  "step: GET alone": get,
  "step: GET + jose check": async () => {
    const read = get();
    await joseVerify();
    return read;
  },
  "step: GET + verifyGrant": async () => {
    const read = get();
    await ops["src verifyGrant"]!();
    return read;
  },
  "step: verifyGrant, then GET": async () => {
    await ops["src verifyGrant"]!();
    return get();
  },
};
Object.assign(ops, steps);
const names = Object.keys(ops);

// Warm every path once (JIT, lazy imports) before measuring.
for (const name of names) for (let i = 0; i < 20; i++) await ops[name]!();

const cold = new Map<string, number[]>(names.map((n) => [n, []]));
const loads: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round) % names.length]!; // a different order each round
    await sleep(IDLE_MS);
    const start = performance.now();
    await ops[name]!();
    cold.get(name)!.push(performance.now() - start);
  }
  loads.push(os.loadavg()[0]!);
}

const warm = new Map<string, number[]>();
for (const name of names) {
  const times: number[] = [];
  for (let i = 0; i < WARM; i++) {
    const start = performance.now();
    await ops[name]!();
    times.push(performance.now() - start);
  }
  warm.set(name, times);
}

const ms = (v: number): string => v.toFixed(3);
console.log(
  `grant crypto, ${ROUNDS} cold rounds after ${IDLE_MS} ms idle, ${WARM} warm; load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
);
console.log(
  `${"operation".padEnd(30)} ${"cold p50".padStart(9)} ${"cold p25".padStart(9)} ${"cold min".padStart(9)} ${"cold max".padStart(9)} ${"warm p50".padStart(9)} ${"warm p90".padStart(9)}  (ms)`,
);
for (const name of names) {
  const c = [...cold.get(name)!].sort((a, b) => a - b);
  const w = [...warm.get(name)!].sort((a, b) => a - b);
  console.log(
    `${name.padEnd(30)} ${ms(percentile(c, 50)).padStart(9)} ${ms(percentile(c, 25)).padStart(9)} ${ms(c[0]!).padStart(9)} ${ms(c.at(-1)!).padStart(9)} ${ms(percentile(w, 50)).padStart(9)} ${ms(percentile(w, 90)).padStart(9)}`,
  );
}
target.close();
