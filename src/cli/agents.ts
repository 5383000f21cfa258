import type { CliConfig } from "../config/load.ts";
import { runningServer } from "../server/data-dir-lock.ts";
import { addAgent } from "../service/agents/index.ts";
import { ServiceError } from "../service/errors.ts";
import { listAgents, type AgentSummary } from "../service/agents/index.ts";
import { revokeAgent } from "../service/agents/index.ts";
import { createLoginLink } from "../service/sign-in/index.ts";
import { verifyAudit, type AuditProblem, type AuditVerdict } from "../service/audit/index.ts";
import { openMigrated } from "../store/open-migrated.ts";
import { cliContext } from "./cli-context.ts";

/** The agent verbs the CLI offers, whichever way it reaches the database. */
interface AgentAdmin {
  add(name: string): Promise<{ name: string; key: string; webhookSecret: string }>;
  loginLink(userId: string, name: string | undefined): Promise<{ url: string; expiresAt: string }>;
  auditVerify(): Promise<AuditVerdict>;
  list(): Promise<AgentSummary[]>;
  revoke(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * PostgreSQL is opened directly. An embedded data dir is opened directly only when no server
 * holds it; otherwise the CLI asks that server, since PGlite must not be opened twice.
 */
export async function agentAdmin(config: CliConfig): Promise<AgentAdmin> {
  const server = config.database.kind === "pglite" ? runningServer(config.database.dataDir) : undefined;
  if (server) return remoteAdmin(server.url, server.adminToken);
  const database = await openMigrated(config.database);
  const ctx = cliContext(config, database);
  return {
    add: (name) => addAgent(ctx, { name }),
    auditVerify: () => verifyAudit(ctx),
    loginLink: (userId, name) => {
      if (!config.browser.loginLinks) throw new ServiceError("invalid_request", "sign-in links are switched off in the config (browser.loginLinks: false)");
      return createLoginLink(ctx, { userId, name, via: "cli" });
    },
    list: () => listAgents(ctx),
    revoke: (name) => revokeAgent(ctx, { name }),
    close: () => database.close(),
  };
}

function remoteAdmin(url: string, token: string): AgentAdmin {
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(url + "/admin" + path, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }).catch((err: unknown) => {
      throw new Error(`the server using this data dir (${url}) did not answer: ${(err as Error).message}`);
    });
    const json = (await response.json()) as T & { error?: { code: ServiceError["code"]; message: string } };
    if (json.error) throw new ServiceError(json.error.code, json.error.message);
    return json;
  };
  return {
    add: (name) => call("POST", "/agents", { name }),
    auditVerify: () => call("GET", "/audit/verify"),
    loginLink: (userId, name) => call("POST", "/login-links", { userId, ...(name !== undefined ? { name } : {}) }),
    list: async () => (await call<{ agents: AgentSummary[] }>("GET", "/agents")).agents,
    revoke: async (name) => void (await call("POST", `/agents/${encodeURIComponent(name)}/revoke`)),
    close: async () => {},
  };
}

/** `countersign agents add NAME | list | revoke NAME`, its arguments checked by the dispatcher (src/cli/commands.ts). */
export async function agentsCommand(
  config: CliConfig,
  verb: "add" | "list" | "revoke",
  name: string | undefined,
  out: (line: string) => void,
): Promise<number> {
  const admin = await agentAdmin(config);
  try {
    if (verb === "add") {
      const agent = await admin.add(name!);
      out(`Created agent '${agent.name}'. Its webhook signing secret, then its key (shown once; send it as 'Authorization: Bearer <key>'):`);
      out(agent.webhookSecret);
      out(agent.key);
    } else if (verb === "revoke") {
      await admin.revoke(name!);
      out(`Revoked agent '${name}'; its key no longer works.`);
    } else {
      const agents = await admin.list();
      if (agents.length === 0) out("No agents yet. 'countersign agents add NAME' creates one.");
      for (const a of agents) out(`${a.name}\t${a.revokedAt ? `revoked ${a.revokedAt}` : "active"}\tcreated ${a.createdAt}`);
    }
  } finally {
    await admin.close();
  }
  return 0;
}

/** `countersign login-link --user U… [--name …]`: a one-time browser sign-in link, printed as the last line. */
export async function loginLinkCommand(
  config: CliConfig,
  options: { user: string | undefined; name: string | undefined },
  out: (line: string) => void,
): Promise<number> {
  if (!options.user) throw new ServiceError("invalid_request", "login-link needs --user, the Slack user id to sign in as, e.g. --user U024BE7LH");
  const admin = await agentAdmin(config);
  try {
    const link = await admin.loginLink(options.user, options.name);
    out(`One-time sign-in link for ${options.user}, valid until ${link.expiresAt} and usable once:`);
    out(link.url);
  } finally {
    await admin.close();
  }
  return 0;
}

/** `countersign audit verify`: recompute every chain and seal; exit 1 naming where the log breaks. */
export async function auditVerifyCommand(config: CliConfig, out: (line: string) => void): Promise<number> {
  const admin = await agentAdmin(config);
  try {
    const verdict = await admin.auditVerify();
    for (const line of auditVerdictLines(verdict)) out(line);
    return verdict.ok ? 0 : 1;
  } finally {
    await admin.close();
  }
}

/** What `audit verify` prints: the verdict, then where the log breaks (the first ten places). */
export function auditVerdictLines(verdict: AuditVerdict): string[] {
  const head = verdict.head ? `; newest seal ${verdict.head.seq} (${verdict.head.hash})` : "";
  const pruned = verdict.pruned ? ` (${verdict.pruned} of them pruned by retention, checked through the purge's checkpoint)` : "";
  const sealing = `${verdict.sealed} sealed${pruned}, ${verdict.unsealed} not yet sealed${head}`;
  if (verdict.ok) return [`Audit log intact: ${verdict.events} event(s), every hash, link and seal checks out (${sealing}).`];
  const where = (p: AuditProblem) =>
    p.chain === "seals"
      ? `seal ${p.seal}`
      : p.chain === "plan"
        ? `plan ${p.planId}, event ${p.eventId}`
        : p.chain === "pruned"
          ? `the purge checkpoint${p.eventId !== undefined ? `, event ${p.eventId}` : ""}`
          : `the ${p.chain} chain${p.eventId !== undefined ? `, event ${p.eventId}` : ""}`;
  const [first, ...more] = verdict.problems;
  return [
    `Audit log BROKEN at ${where(first!)} (${first!.kind}): ${first!.message}`,
    ...more.slice(0, 9).map((p) => `  also at ${where(p)} (${p.kind}): ${p.message}`),
    ...(more.length > 9 ? [`  … and ${more.length - 9} more`] : []),
    `(${verdict.events} event(s) checked; ${sealing})`,
  ];
}
