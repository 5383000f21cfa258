import { whyUnsafePath } from "../plan/target-path.ts";

/**
 * The URL of `path` under `baseUrl`. Paths were validated with the request; this checks again
 * on the final URL so that no caller can reach another host or climb out of the base path.
 */
export function targetUrl(baseUrl: string, path: string): URL {
  const why = whyUnsafePath(path);
  if (why) throw new Error(`unsafe target path ${JSON.stringify(path)}: ${why}`);
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, "");
  const url = new URL(base.origin + basePath + path);
  if (url.origin !== base.origin || !url.pathname.startsWith(basePath + "/")) {
    throw new Error(`target path ${JSON.stringify(path)} leaves ${baseUrl}`);
  }
  return url;
}
