import { BODY_ROUTES, describeBodyLimitSweep } from "./body-limit-sweep.ts";

// One case per kind of body reader: a browser form and a JSON door (Slack's has its own file),
// and the undo's, the edit's and the delegation's forms; test/slow/body-limit-sweep.test.ts posts to every route.
describeBodyLimitSweep(
  "100 MB bodies: one browser form and one JSON door, and the undo, edit and delegation forms",
  BODY_ROUTES.filter((r) => ["pause form", "agent API plan", "undo form", "edit form", "delegation form"].includes(r.name)),
  [
    { chunked: true, signedIn: true },
    { chunked: false, signedIn: false },
  ],
);
