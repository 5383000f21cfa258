import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { demoDatabaseNames } from "../../../src/demo/postgres-row-demo.ts";
import { scramKeys, scramSha256Verifier } from "../../../src/demo/scram-verifier.ts";

/** The demo's names cannot collide, and role passwords travel as SCRAM verifiers. */
describe("postgres.row demo names", () => {
  const at = (database: string) => demoDatabaseNames(`postgres://u@127.0.0.1:5432/${database}`);

  it("give databases whose names differ only in case or punctuation demos of their own", () => {
    const names = ["a-b", "a_b", "A_B", "a%20b", "a.b"].map((db) => at(db).database);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^a_b_demo_[0-9a-f]{8}$/);
  });

  it("never end in `_demo` alone, so an application database called `x_demo` is not the demo of `x`", () => {
    expect(at("x").database).not.toBe("x_demo");
    expect(at("x").database).toMatch(/^x_demo_[0-9a-f]{8}$/);
  });

  it("are the same for the same database, with the roles next to it, and fit in 63 bytes however long the name", () => {
    expect(at("countersign")).toEqual(at("countersign"));
    const long = at("é".repeat(40) + "x".repeat(100));
    expect(long.readRole).toBe(`${long.database}_read`);
    expect(long.writeRole).toBe(`${long.database}_write`);
    for (const name of Object.values(long)) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
    expect(at("x".repeat(200)).writeRole).toHaveLength(63);
  });

  it("use the user's name when the URL names no database, as PostgreSQL does", () => {
    expect(demoDatabaseNames("postgres://alice@127.0.0.1/").database).toBe(at("alice").database);
  });

  it("throw on a URL they cannot read (the caller turns the demo off with the reason)", () => {
    expect(() => demoDatabaseNames("postgres://u@h1:5432,h2:5433/db")).toThrow();
    expect(() => demoDatabaseNames("postgres://u@h/d%zz")).toThrow(URIError);
  });
});

describe("SCRAM-SHA-256 verifier", () => {
  it("has PostgreSQL's form, a fresh salt each time", () => {
    const one = scramSha256Verifier("0123abcd");
    expect(one).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$/);
    expect(scramSha256Verifier("0123abcd")).not.toBe(one);
    expect(one).not.toContain("0123abcd");
  });

  it("verifies the RFC 7677 example exchange (user, pencil): the client's proof against StoredKey, the server's signature from ServerKey", () => {
    const salt = Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64");
    const [, iterations, saltText, stored, server] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(scramSha256Verifier("pencil", salt))!;
    expect([iterations, saltText]).toEqual(["4096", "W22ZaJ0SNY7soEsUEjb6gQ=="]);
    const authMessage =
      "n=user,r=rOprNGfwEbeRWgbNEkqO," +
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    // What the server does with the verifier alone: ClientKey = proof XOR HMAC(StoredKey, AuthMessage), and H(ClientKey) must be StoredKey.
    const proof = Buffer.from("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "base64");
    const signature = createHmac("sha256", Buffer.from(stored!, "base64")).update(authMessage).digest();
    const clientKey = Buffer.from(proof.map((byte, i) => byte ^ signature[i]!));
    expect(createHash("sha256").update(clientKey).digest().toString("base64")).toBe(stored);
    expect(createHmac("sha256", Buffer.from(server!, "base64")).update(authMessage).digest("base64")).toBe("6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    expect(scramKeys("pencil", salt, 4096).clientKey).toEqual(clientKey);
  });

  it("refuses a password PostgreSQL would normalize first", () => {
    expect(() => scramSha256Verifier("pässword")).toThrow(/printable-ASCII/);
    expect(() => scramSha256Verifier("")).toThrow(/printable-ASCII/);
    expect(() => scramSha256Verifier("with space")).toThrow(/printable-ASCII/);
  });
});
