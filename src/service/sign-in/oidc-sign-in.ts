import * as oidc from "openid-client";
import { SlackUserId } from "../../plan/schema.ts";
import { sameSecret } from "../../util/bearer.ts";
import type { ServiceContext } from "../context.ts";
import { ServiceError } from "../errors.ts";
import { openSession, type WebSession } from "./login-links.ts";
import { flowStateKey, openFlowState, safeReturnPath, sealFlowState } from "./oidc-flow-state.ts";

const TEAM_CLAIM = "https://slack.com/team_id";
const USER_CLAIM = "https://slack.com/user_id";

export interface OidcSettings {
  clientId: string;
  clientSecret: string;
  issuer: string;
  /** The only workspace whose people may sign in. */
  teamId: string;
  /** `${PUBLIC_URL}/auth/slack/callback`, exactly as registered with the Slack app. */
  redirectUri: string;
  fetch?: typeof fetch;
}

/** The issuer could not be reached: not the person's fault, and nothing was refused. */
export class SignInUnavailable extends Error {
  override name = "SignInUnavailable";
}

export interface SlackSignIn {
  /** Where to send the browser, and the sealed flow state it must bring back. */
  start(returnTo: string | undefined): Promise<{ authorizeUrl: string; flowCookie: string }>;
  /** Checks Slack's answer end to end and opens a session, or throws ServiceError("unauthorized") naming what was wrong. */
  finish(callbackParams: URLSearchParams, flowCookie: string | undefined): Promise<{ sessionId: string; session: WebSession; returnTo: string }>;
}

/**
 * Sign in with Slack: OpenID Connect authorization code flow with PKCE, state and nonce, through
 * openid-client. The ID token's signature (issuer's JWKS), issuer, audience, nonce and expiry are
 * checked by the library; the workspace and the Slack user id are checked here.
 */
export function slackSignIn(ctx: Pick<ServiceContext, "database" | "clock" | "logger">, settings: OidcSettings): SlackSignIn {
  const key = flowStateKey(settings.clientSecret);
  let configuration: Promise<oidc.Configuration> | undefined;
  // Discovered at the first sign-in, not at start, so an issuer that is briefly down cannot stop the server; a failure is retried next time.
  const discover = (): Promise<oidc.Configuration> => {
    configuration ??= oidc
      .discovery(new URL(settings.issuer), settings.clientId, { client_secret: settings.clientSecret }, oidc.ClientSecretPost(settings.clientSecret), {
        // Signatures are checked even over TLS: a token endpoint is one more place to be wrong.
        execute: [oidc.enableNonRepudiationChecks, ...(settings.issuer.startsWith("http:") ? [oidc.allowInsecureRequests] : [])],
        timeout: 10,
        ...(settings.fetch ? { [oidc.customFetch]: settings.fetch } : {}),
      })
      .catch((err: unknown) => {
        configuration = undefined;
        throw new SignInUnavailable(`could not read the OpenID configuration of ${settings.issuer}: ${describe(err)}`);
      });
    return configuration;
  };
  const refuse = (reason: string): never => {
    ctx.logger.info({ reason }, "Sign in with Slack refused");
    throw new ServiceError("unauthorized", reason);
  };

  return {
    async start(returnTo) {
      const config = await discover();
      const flow = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier(), returnTo: safeReturnPath(returnTo) };
      const authorizeUrl = oidc.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri,
        scope: "openid profile email",
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(flow.codeVerifier),
        code_challenge_method: "S256",
        // Slack then skips its workspace picker.
        team: settings.teamId,
      });
      return { authorizeUrl: authorizeUrl.href, flowCookie: await sealFlowState(key, flow, ctx.clock()) };
    },

    async finish(callbackParams, flowCookie) {
      const flow = await openFlowState(key, flowCookie, ctx.clock());
      if (!flow)
        return refuse(
          "this browser has no sign-in in progress (it expired after 10 minutes, was started in another browser, or was already used); start again with Sign in with Slack",
        );
      const state = callbackParams.get("state");
      if (!state) return refuse("Slack's answer carries no state, so it cannot be matched to the sign-in this browser started");
      if (!sameSecret(state, flow.state)) return refuse("Slack's answer belongs to a different sign-in than the one this browser started (state mismatch)");

      const config = await discover();
      const callbackUrl = new URL(settings.redirectUri);
      callbackUrl.search = callbackParams.toString();
      let claims: oidc.IDToken;
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: flow.codeVerifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
        claims = tokens.claims()!;
      } catch (err) {
        if (err instanceof oidc.AuthorizationResponseError)
          return refuse(`Slack did not sign you in (${err.error}${err.error_description ? `: ${err.error_description}` : ""})`);
        if (err instanceof oidc.ResponseBodyError)
          return refuse(
            `Slack refused the sign-in code (${err.error}${err.error_description ? `: ${err.error_description}` : ""}); a code works once and only for minutes, so start again`,
          );
        if (err instanceof oidc.ClientError && !["OAUTH_TIMEOUT", "OAUTH_ABORT"].includes(err.code ?? ""))
          return refuse(`Slack's ID token was not accepted: ${describe(err)}`);
        throw new SignInUnavailable(`could not complete the sign-in with ${settings.issuer}: ${describe(err)}`);
      }

      const team = claims[TEAM_CLAIM];
      if (team !== settings.teamId)
        return refuse(
          `you signed in to Slack workspace ${typeof team === "string" ? team : "(none named)"}, but this Countersign belongs to workspace ${settings.teamId}; sign in to that workspace instead`,
        );
      const userId = claims[USER_CLAIM] ?? claims.sub;
      if (typeof userId !== "string" || !SlackUserId.safeParse(userId).success)
        return refuse("Slack's ID token names no Slack user id (https://slack.com/user_id or sub)");
      const name = typeof claims.name === "string" ? claims.name : null;
      const now = ctx.clock();
      const opened = await ctx.database.db.transaction((tx) => openSession(tx, { userId, name, via: "oidc", now }));
      return { ...opened, returnTo: flow.returnTo };
    },
  };
}

/** The library's message plus its cause's, which names the claim or check that failed. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error && err.cause.message !== err.message ? ` (${err.cause.message})` : "";
  return `${err.message}${cause}`;
}
