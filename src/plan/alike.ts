import { neutralizeBidi } from "./bidi.ts";
import { fingerprint } from "./fingerprint.ts";
import { isJsonObject, toPointer, type Json } from "./json.ts";
import type { PlanDocument, PlannedAction } from "./schema.ts";

/** What one action of a plan does, as far as likeness goes: where, how, and which fields it writes. */
export interface ActionShape {
  target: string;
  /** The postgres.row table; absent for http.json (its resource path differs from plan to plan). */
  table?: string;
  op: string;
  /** JSON Pointers of the fields the action writes, sorted; "" for the whole resource. */
  fields: string[];
}

/**
 * What makes plans alike: the same agent, and actions on the same targets with the same ops
 * writing the same fields. `key` names it in one short string; plans with equal keys may be
 * reviewed together. Computed by the server from each stored document: an agent cannot group
 * plans, only propose them.
 */
export interface Likeness {
  key: string;
  agent: string;
  actions: ActionShape[];
}

/**
 * The plan's likeness, or undefined when its recorded policy keeps it out of batches
 * (`policy.batch: false`, from its targets' config).
 */
export function likenessOf(document: Pick<PlanDocument, "agent" | "actions" | "policy">): Likeness | undefined {
  if (document.policy.batch === false) return undefined;
  // Order of actions does not change what a plan does to its targets' fields.
  const actions = document.actions.map(shapeOf).sort((a, b) => compare(JSON.stringify(a), JSON.stringify(b)));
  return { key: fingerprint({ agent: document.agent, actions }).slice("sha256:".length, "sha256:".length + 32), agent: document.agent, actions };
}

/** Plans alike with at least one other of the list, grouped in the order their first plan comes. */
export interface AlikeGroup {
  likeness: Likeness;
  planIds: string[];
}

/**
 * The groups of two or more alike plans among `plans`, each in the order given (a plan without a
 * likeness, one that may not be batched, belongs to none).
 */
export function alikeGroups(plans: readonly { id: string; likeness?: Likeness | undefined }[]): AlikeGroup[] {
  const groups = new Map<string, AlikeGroup>();
  for (const plan of plans) {
    const { likeness } = plan;
    if (!likeness) continue;
    const group = groups.get(likeness.key);
    if (group) group.planIds.push(plan.id);
    else groups.set(likeness.key, { likeness, planIds: [plan.id] });
  }
  return [...groups.values()].filter((g) => g.planIds.length >= 2);
}

/** "crm merge /email, /tier": what the plans of one likeness do, for a heading (bidi controls neutralized: field names are agent-supplied). */
export function likenessSummary(likeness: Likeness): string {
  return neutralizeBidi(
    likeness.actions.map((a) => `${a.target}${a.table ? `.${a.table}` : ""} ${a.op} ${a.fields.map((f) => f || "(whole resource)").join(", ")}`).join("; "),
  );
}

/** Alike plans offered to a reviewer together: how many, what they share, and one of them to open the batch by. */
export interface AlikeOffer {
  /** The first plan of the group, as the list was ordered. */
  like: string;
  count: number;
  summary: string;
}

/** The offers to make over a list of plans a person may decide: one per group of two or more alike plans. */
export function alikeOffers(plans: readonly { id: string; likeness?: Likeness | undefined }[]): AlikeOffer[] {
  return alikeGroups(plans).map((g) => ({ like: g.planIds[0]!, count: g.planIds.length, summary: likenessSummary(g.likeness) }));
}

function shapeOf(action: PlannedAction): ActionShape {
  if (action.kind === "postgres.row") {
    const fields = action.op === "delete" ? [""] : Object.keys(action.values ?? {}).map((column) => toPointer([column]));
    return { target: action.target, table: action.table, op: action.op, fields: sorted(fields) };
  }
  if (action.op === "delete" || action.body === undefined) return { target: action.target, op: action.op, fields: [""] };
  return { target: action.target, op: action.op, fields: sorted(leafPaths(action.body)) };
}

/**
 * The fields a body writes: each member of an object, walked into nested objects; an array, a
 * scalar or a null (a merge patch's removal) is one field. A body that is no object is the whole
 * resource.
 */
function leafPaths(body: Json): string[] {
  const paths: string[] = [];
  const walk = (value: Json, path: string[]) => {
    if (!isJsonObject(value) || (path.length > 0 && Object.keys(value).length === 0)) {
      paths.push(toPointer(path));
      return;
    }
    for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
  };
  walk(body, []);
  return paths;
}

function sorted(paths: string[]): string[] {
  return [...new Set(paths)].sort(compare);
}

/** Code-unit order, the same on every machine (localeCompare is not). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
