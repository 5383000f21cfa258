/**
 * An error and its causes, outermost first, at most six deep: drizzle wraps driver errors in
 * DrizzleQueryError (cause), and Node may raise an AggregateError of per-address failures
 * (`errors`, left to the caller). Every reader of driver errors walks them through this.
 */
export function causeChain(err: unknown): object[] {
  const chain: object[] = [];
  for (let e = err; e && typeof e === "object" && chain.length < 6; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}
