/** People's display names for the pages: read in one query per page, refreshed from Slack in the background. What a door may call lives here; the files beside it are this capability's own. */
export { cleanDisplayName, isSlackUserId } from "./display-name.ts";
export { namesOf } from "./names-of.ts";
export type { PeopleNames, PersonName } from "./names-of.ts";
export { NAME_REFRESH_MS, NAME_RETRY_MS, refreshNames } from "./refresh-names.ts";
