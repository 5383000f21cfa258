import { BODY_ROUTES, describeBodyLimitSweep } from "./body-limit-sweep.ts";

// One case per kind of body reader: a browser form and a JSON door (Slack's has its own file);
// test/slow/body-limit-sweep.test.ts posts to every route.
describeBodyLimitSweep(
  "100 MB bodies: one browser form and one JSON door",
  BODY_ROUTES.filter((r) => r.name === "pause form" || r.name === "agent API plan"),
  [
    { chunked: true, signedIn: true },
    { chunked: false, signedIn: false },
  ],
);
