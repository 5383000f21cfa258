import { timingSafeEqual } from "node:crypto";

/** Whether a presented secret equals the expected one, compared in constant time. */
export function sameSecret(got: string | undefined, expected: string): boolean {
  const a = Buffer.from(got ?? "");
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether an Authorization header carries exactly this bearer secret. */
export function bearerMatches(header: string | undefined, secret: string): boolean {
  return sameSecret(header, `Bearer ${secret}`);
}
