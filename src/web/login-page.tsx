/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { Layout } from "./layout.tsx";

/** The confirm step: a GET never spends the link (link previewers would), only this form's POST does. */
export function LoginConfirmPage(props: { token: string }) {
  return (
    <Layout title="Sign in">
      <section class="card">
        <h1>Sign in to Countersign</h1>
        <p>This one-time link signs this browser in as the Slack user who asked for it. It works once, for five minutes.</p>
        <form method="post" action={`/login/${props.token}`}>
          <button type="submit" class="approve">
            Sign in
          </button>
        </form>
      </section>
    </Layout>
  );
}

export function MessagePage(props: { title: string; text: string }) {
  return (
    <Layout title={props.title}>
      <section class="card notice bad" role="alert">
        <h1>{props.title}</h1>
        <p>{props.text}</p>
        <p>
          <a href="/plans">Go to the plans</a>
        </p>
      </section>
    </Layout>
  );
}
