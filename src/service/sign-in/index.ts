/** Browser sessions: one-time login links and Sign in with Slack. What a door may call lives here; the files beside it are this capability's own. */
export { consumeLoginLink, createLoginLink, endSession, SESSION_TTL_MS, sessionOf } from "./login-links.ts";
export type { WebSession } from "./login-links.ts";
export { FLOW_TTL_SECONDS } from "./oidc-flow-state.ts";
export { SignInUnavailable, slackSignIn } from "./oidc-sign-in.ts";
export type { SlackSignIn } from "./oidc-sign-in.ts";
