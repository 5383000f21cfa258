import { describe, expect, it } from "vitest";
import { databaseStartupError, listenStartupError, StartupError } from "../../../src/util/startup-errors.ts";

const PG = { kind: "postgres" as const, url: "postgres://app:hunter2@db.internal:6543/countersign" };

/** An error shaped as the drivers throw them: a code, perhaps wrapped by drizzle in `cause`. */
function driverError(code: string, message: string, wrapped = false): Error {
  const inner = Object.assign(new Error(message), { code });
  return wrapped ? new Error("Failed query: SELECT 1", { cause: inner }) : inner;
}

describe("databaseStartupError", () => {
  it.each<[string, string, RegExp]>([
    [
      "ECONNREFUSED",
      "connect ECONNREFUSED",
      /cannot reach PostgreSQL at db\.internal:6543 \(ECONNREFUSED\); start PostgreSQL there, or fix the host and port in DATABASE_URL/,
    ],
    ["CONNECT_TIMEOUT", "write CONNECT_TIMEOUT", /cannot reach PostgreSQL at db\.internal:6543 \(CONNECT_TIMEOUT\)/],
    ["ENOTFOUND", "getaddrinfo ENOTFOUND", /the host "db\.internal" cannot be resolved; fix the host in DATABASE_URL/],
    [
      "3D000",
      'database "countersign" does not exist',
      /database "countersign" does not exist on db\.internal:6543; create it \(createdb -h db\.internal -p 6543 -U app countersign\)/,
    ],
    ["28000", 'role "app" does not exist', /refused user "app" \(role "app" does not exist\); create that role or fix the user in DATABASE_URL/],
    [
      "28P01",
      'password authentication failed for user "app"',
      /password authentication failed for user "app" at db\.internal:6543; fix the password in DATABASE_URL/,
    ],
    ["42501", "permission denied for schema public", /user "app" may not create Countersign's tables in "countersign" \(permission denied for schema public\)/],
  ])("%s names DATABASE_URL and the fix", (code, message, expected) => {
    for (const wrapped of [false, true]) {
      const err = databaseStartupError(driverError(code, message, wrapped), PG);
      expect(err).toBeInstanceOf(StartupError);
      expect(err!.key).toBe("DATABASE_URL");
      expect(err!.message).toMatch(/^DATABASE_URL: /);
      expect(err!.message).toMatch(expected);
      expect(err!.message).not.toContain("hunter2");
    }
  });

  it("an AggregateError of per-address refusals (localhost on IPv4 and IPv6) is unreachable too", () => {
    const err = new AggregateError([driverError("ECONNREFUSED", "::1"), driverError("ECONNREFUSED", "127.0.0.1")], "");
    expect(databaseStartupError(err, PG)?.problem).toMatch(/cannot reach PostgreSQL/);
  });

  it("a fault that is not about configuration is left alone (it keeps its stack)", () => {
    expect(databaseStartupError(driverError("42P01", 'relation "plans" does not exist'), PG)).toBeUndefined();
    expect(databaseStartupError(new TypeError("x is not a function"), PG)).toBeUndefined();
  });

  it("the embedded database's directory problems name COUNTERSIGN_DATA_DIR", () => {
    const err = databaseStartupError(driverError("EACCES", "permission denied, mkdir '/srv/cs'"), { kind: "pglite", dataDir: "/srv/cs" });
    expect(err?.key).toBe("COUNTERSIGN_DATA_DIR");
    expect(err?.message).toContain("/srv/cs");
  });
});

describe("listenStartupError", () => {
  it("a port in use names PORT", () => {
    expect(listenStartupError(driverError("EADDRINUSE", "listen EADDRINUSE"), 3000, "0.0.0.0")?.message).toBe(
      "PORT: port 3000 on 0.0.0.0 is already in use (another Countersign, or another program); stop that one, or set PORT to a free port",
    );
  });

  it("a privileged port names PORT, a foreign address names HOST", () => {
    expect(listenStartupError(driverError("EACCES", "listen EACCES"), 80, "0.0.0.0")?.key).toBe("PORT");
    expect(listenStartupError(driverError("EADDRNOTAVAIL", "listen EADDRNOTAVAIL"), 3000, "10.9.9.9")?.key).toBe("HOST");
  });

  it("anything else is not a configuration problem", () => {
    expect(listenStartupError(new Error("boom"), 3000, "0.0.0.0")).toBeUndefined();
  });
});
