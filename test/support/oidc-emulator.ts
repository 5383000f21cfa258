import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";

/** Who the emulator signs in at its authorize endpoint (there is no login UI). */
export interface OidcUser {
  userId: string;
  teamId: string;
  name?: string;
  email?: string;
}

/** Ways to spoil the next ID token, one test at a time. */
export interface IdTokenFault {
  audience?: string;
  nonce?: string;
  issuer?: string;
  /** Signed with a key that is not in the JWKS. */
  foreignKey?: boolean;
  /** Signed properly, then the payload is swapped (here: another team) keeping the signature. */
  tamperedPayload?: boolean;
  /** Seconds from now; negative means already expired. */
  expiresIn?: number;
}

export interface OidcCall {
  path: string;
  method: string;
  params: Record<string, string>;
  status: number;
}

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  nonce: string | undefined;
  codeChallenge: string;
  user: OidcUser;
  used: boolean;
  expiresAt: number;
}

/**
 * Slack's OpenID Connect provider over real HTTP, for tests: discovery, an authorize endpoint that
 * redirects straight back with a code for `user` (or with `error` when `deny` is set), a token
 * endpoint that checks client_secret_post, redirect_uri, the PKCE verifier and that a code is used
 * once, a JWKS, userinfo, and RS256 ID tokens carrying Slack's team and user claims. Paths are
 * Slack's own.
 */
export class OidcEmulator {
  user: OidcUser;
  /** Answer the next authorize request with this OAuth error instead of a code. */
  deny: string | undefined;
  /** Applied to the next ID token only. */
  nextIdToken: IdTokenFault | undefined;
  readonly calls: OidcCall[] = [];
  private server: Server | undefined;
  private sockets = new Set<Socket>();
  private codes = new Map<string, IssuedCode>();
  private accessTokens = new Map<string, OidcUser>();
  private keys: { privateKey: CryptoKey; jwk: JWK } | undefined;
  private foreign: CryptoKey | undefined;
  private base = "";

  constructor(
    readonly client: { clientId: string; clientSecret: string; redirectUris: string[] },
    user: OidcUser,
  ) {
    this.user = user;
  }

  get url(): string {
    return this.base;
  }

  /** How many codes were redeemed at the token endpoint. */
  get redeemed(): number {
    return [...this.codes.values()].filter((c) => c.used).length;
  }

  async start(): Promise<void> {
    const pair = await generateKeyPair("RS256", { extractable: true });
    this.keys = { privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid: "emulator-1", alg: "RS256", use: "sig" } };
    this.foreign = (await generateKeyPair("RS256")).privateKey;
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.send(req, res, {}, 500, { error: "server_error", error_description: String(err) }));
    });
    this.server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.base);
    const query = Object.fromEntries(url.searchParams);
    if (req.method === "GET" && url.pathname === "/.well-known/openid-configuration") {
      return this.send(req, res, query, 200, {
        issuer: this.base,
        authorization_endpoint: `${this.base}/openid/connect/authorize`,
        token_endpoint: `${this.base}/api/openid.connect.token`,
        userinfo_endpoint: `${this.base}/api/openid.connect.userInfo`,
        jwks_uri: `${this.base}/openid/connect/keys`,
        scopes_supported: ["openid", "profile", "email"],
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        token_endpoint_auth_methods_supported: ["client_secret_post"],
        code_challenge_methods_supported: ["S256"],
        claims_supported: ["sub", "auth_time", "iss", "name", "email", "email_verified", "https://slack.com/team_id", "https://slack.com/user_id"],
      });
    }
    if (req.method === "GET" && url.pathname === "/openid/connect/keys") return this.send(req, res, query, 200, { keys: [this.keys!.jwk] });
    if (req.method === "GET" && url.pathname === "/openid/connect/authorize") return this.authorize(req, res, query);
    if (req.method === "POST" && url.pathname === "/api/openid.connect.token")
      return this.token(req, res, Object.fromEntries(new URLSearchParams(await readBody(req))));
    if (req.method === "GET" && url.pathname === "/api/openid.connect.userInfo") {
      const user = this.accessTokens.get((req.headers.authorization ?? "").replace(/^Bearer /, ""));
      if (!user) return this.send(req, res, query, 401, { ok: false, error: "invalid_auth" });
      return this.send(req, res, query, 200, { ok: true, sub: user.userId, ...this.claimsOf(user) });
    }
    return this.send(req, res, query, 404, { error: "not_found" });
  }

  private authorize(req: IncomingMessage, res: ServerResponse, q: Record<string, string>): void {
    const bad = (description: string) => this.send(req, res, q, 400, { error: "invalid_request", error_description: description });
    if (q.client_id !== this.client.clientId) return void bad("unknown client_id");
    if (!q.redirect_uri || !this.client.redirectUris.includes(q.redirect_uri)) return void bad("redirect_uri is not registered");
    if (q.response_type !== "code") return void bad("response_type must be code");
    if (!(q.scope ?? "").split(" ").includes("openid")) return void bad("scope must include openid");
    if (!q.code_challenge || q.code_challenge_method !== "S256") return void bad("PKCE with S256 is required");
    const back = new URL(q.redirect_uri);
    if (q.state !== undefined) back.searchParams.set("state", q.state);
    if (this.deny) {
      back.searchParams.set("error", this.deny);
      this.deny = undefined;
    } else {
      const code = randomBytes(16).toString("hex");
      this.codes.set(code, {
        clientId: q.client_id,
        redirectUri: q.redirect_uri,
        nonce: q.nonce,
        codeChallenge: q.code_challenge,
        user: { ...this.user },
        used: false,
        expiresAt: Date.now() + 5 * 60_000,
      });
      back.searchParams.set("code", code);
    }
    this.record(req, q, 302);
    res.writeHead(302, { location: back.href }).end();
  }

  private async token(req: IncomingMessage, res: ServerResponse, form: Record<string, string>): Promise<void> {
    const fail = (status: number, error: string, description: string) =>
      this.send(req, res, form, status, { ok: false, error, error_description: description });
    if (form.client_id !== this.client.clientId || form.client_secret !== this.client.clientSecret)
      return fail(401, "invalid_client", "client authentication failed");
    if (form.grant_type !== "authorization_code") return fail(400, "unsupported_grant_type", "only authorization_code");
    const issued = this.codes.get(form.code ?? "");
    if (!issued || issued.clientId !== form.client_id || issued.expiresAt < Date.now()) return fail(400, "invalid_grant", "unknown or expired code");
    if (issued.used) return fail(400, "invalid_grant", "code already used");
    issued.used = true;
    if (form.redirect_uri !== issued.redirectUri) return fail(400, "invalid_grant", "redirect_uri does not match the authorize request");
    const challenge = createHash("sha256")
      .update(form.code_verifier ?? "")
      .digest("base64url");
    if (challenge !== issued.codeChallenge) return fail(400, "invalid_grant", "code_verifier does not match code_challenge");
    const accessToken = `xoxp-${randomBytes(12).toString("hex")}`;
    this.accessTokens.set(accessToken, issued.user);
    return this.send(req, res, form, 200, { ok: true, access_token: accessToken, token_type: "Bearer", id_token: await this.idToken(issued) });
  }

  private claimsOf(user: OidcUser): Record<string, unknown> {
    return {
      "https://slack.com/user_id": user.userId,
      "https://slack.com/team_id": user.teamId,
      ...(user.name ? { name: user.name } : {}),
      ...(user.email ? { email: user.email, email_verified: true } : {}),
    };
  }

  private async idToken(issued: IssuedCode): Promise<string> {
    const fault = this.nextIdToken ?? {};
    this.nextIdToken = undefined;
    const now = Math.floor(Date.now() / 1000);
    const payload = { ...this.claimsOf(issued.user), auth_time: now, ...((fault.nonce ?? issued.nonce) ? { nonce: fault.nonce ?? issued.nonce } : {}) };
    const jwt = await new SignJWT(payload)
      .setProtectedHeader({ alg: "RS256", kid: "emulator-1", typ: "JWT" })
      .setIssuer(fault.issuer ?? this.base)
      .setSubject(issued.user.userId)
      .setAudience(fault.audience ?? issued.clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + (fault.expiresIn ?? 3600))
      .sign(fault.foreignKey ? this.foreign! : this.keys!.privateKey);
    if (!fault.tamperedPayload) return jwt;
    const [header, body, signature] = jwt.split(".");
    const claims = JSON.parse(Buffer.from(body!, "base64url").toString("utf8")) as Record<string, unknown>;
    claims["https://slack.com/team_id"] = "T0FORGED";
    return [header, Buffer.from(JSON.stringify(claims)).toString("base64url"), signature].join(".");
  }

  private record(req: IncomingMessage, params: Record<string, string>, status: number): void {
    const shown = { ...params };
    for (const secret of ["client_secret", "code_verifier"]) if (shown[secret]) shown[secret] = "[present]";
    this.calls.push({ path: new URL(req.url ?? "/", this.base).pathname, method: req.method ?? "", params: shown, status });
  }

  private send(req: IncomingMessage, res: ServerResponse, params: Record<string, string>, status: number, body: unknown): void {
    this.record(req, params, status);
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }).end(JSON.stringify(body));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
