import type { Json } from "./json.ts";

/** What one read of a JSON resource found: its document and version, or nothing there. */
export type ResourceState = { exists: true; body: Json; etag: string | null } | { exists: false };
