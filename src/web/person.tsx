/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { PeopleNames } from "../service/people/index.ts";

/**
 * A person as the pages name them: by display name (the id in its tooltip); with the id beside
 * it where another person shares the name, or where `withId` asks (the audit timeline); by id
 * alone while Slack has not named them. Names are text like plan text: escaped, bidi made visible.
 */
export function Person(props: { id: string; names: PeopleNames | undefined; withId?: boolean }) {
  const known = props.names?.get(props.id);
  if (!known) return <code class="person-id">{props.id}</code>;
  if (known.shared || props.withId)
    return (
      <span class="person">
        {known.name} <code class="person-id">{props.id}</code>
      </span>
    );
  return (
    <span class="person" title={props.id}>
      {known.name}
    </span>
  );
}

/** A list of people and user groups (a policy's approvers), named, separated by commas. */
export function People(props: { ids: readonly string[]; names: PeopleNames | undefined }) {
  return (
    <>
      {props.ids.map((id, i) => (
        <>
          {i > 0 ? ", " : ""}
          <Person id={id} names={props.names} />
        </>
      ))}
    </>
  );
}
