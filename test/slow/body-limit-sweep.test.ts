import { BODY_ROUTES, describeBodyLimitSweep } from "../e2e/body-limit-sweep.ts";

describeBodyLimitSweep("100 MB bodies on every route that reads one, signed in and not, declared and streamed", BODY_ROUTES, [
  { chunked: false, signedIn: true },
  { chunked: true, signedIn: true },
  { chunked: false, signedIn: false },
  { chunked: true, signedIn: false },
]);
