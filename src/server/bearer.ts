import { timingSafeEqual } from "node:crypto";

/** Whether an Authorization header carries exactly this bearer secret, compared in constant time. */
export function bearerMatches(header: string | undefined, secret: string): boolean {
  const got = Buffer.from(header ?? "");
  const expected = Buffer.from(`Bearer ${secret}`);
  return got.length === expected.length && timingSafeEqual(got, expected);
}
