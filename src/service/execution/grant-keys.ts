import type { GrantKeys } from "../../contract/executor-api.ts";
import { publicKeyFingerprint } from "../../grant/keys.ts";
import type { ServiceContext } from "../context.ts";

/** The keys this server signs grants with, for an executor to check its COUNTERSIGN_GRANT_PUBLIC_KEY against before it claims. */
export function grantKeys(ctx: Pick<ServiceContext, "grantKey">): GrantKeys {
  return { keys: [{ kid: ctx.grantKey.kid, fingerprint: publicKeyFingerprint(ctx.grantKey.key) }] };
}
