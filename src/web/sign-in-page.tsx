/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { Layout } from "./layout.tsx";

/** The ways this Countersign lets a browser sign in; the page lists exactly these. */
export interface SignInOptions {
  /** One-time links from Slack's `/countersign login`, `countersign login-link` or the one `countersign start` prints. */
  loginLinks: boolean;
  /** Where "Sign in with Slack" (OpenID Connect) starts, when it is configured. */
  oidcStartUrl?: string | undefined;
}

/**
 * What a signed-out visitor of a review page gets (with 401): how to sign in, and nothing about
 * any plan: the page is the same for every path, so it does not even confirm that a plan exists.
 */
export function SignInRequiredPage(props: { options: SignInOptions }) {
  const { options } = props;
  return (
    <Layout title="Sign in to review">
      <section class="card">
        <h1>Sign in to review plans</h1>
        <p>Plans show what agents want to change, including people's records, so only signed-in people can read them.</p>
        {options.oidcStartUrl ? (
          <p>
            <a class="button approve" href={options.oidcStartUrl}>
              Sign in with Slack
            </a>
          </p>
        ) : null}
        {options.loginLinks ? (
          <ul>
            <li>
              In Slack, type <code>/countersign login</code>: Countersign answers with a one-time sign-in link, only for you.
            </li>
            <li>
              Running <code>countersign start</code>? Open the sign-in link it printed (or run <code>countersign login-link --user U…</code>).
            </li>
          </ul>
        ) : null}
        {!options.loginLinks && !options.oidcStartUrl ? <p>This Countersign offers no browser sign-in; decide in Slack instead.</p> : null}
      </section>
    </Layout>
  );
}
