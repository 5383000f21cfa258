import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { policyCheck } from "../../../src/cli/policy-check.ts";
import { ConfigError, loadConfig } from "../../../src/config/load.ts";
import { limitsOf, limitVerdict, type AgentUsage } from "../../../src/policy/agent-limits.ts";
import { rateLimited } from "../../../src/service/agents/agent-limits.ts";

const NOW = Date.parse("2026-12-03T08:00:00.000Z");
const idle: AgentUsage = { recent: 0, oldestRecentMs: null, open: 0, soonestExpiryMs: null };

/** The config as `countersign.yml` would give it, with no file on disk. */
function limitsFromFile(limits: unknown) {
  return loadConfig({ env: {}, role: "cli", cwd: mkdtempSync(path.join(tmpdir(), "limits-")), fallback: { limits } }).limits;
}

describe("agent limits: the config", () => {
  it("defaults to 60 plans a minute and 100 open when absent", () => {
    expect(limitsFromFile(undefined)).toEqual({ plansPerMinute: 60, maxPending: 100, agents: {} });
    expect(limitsOf(undefined, "deploy-bot")).toEqual({
      plansPerMinute: 60,
      maxPending: 100,
      keys: { plansPerMinute: "limits.plansPerMinute", maxPending: "limits.maxPending" },
    });
  });

  it("takes an agent's own values over the top-level ones, one key at a time; unknown agent names are fine", () => {
    const config = limitsFromFile({ plansPerMinute: 10, agents: { "deploy-bot": { maxPending: 3 }, "added-later": { plansPerMinute: 1 } } });
    expect(limitsOf(config, "deploy-bot")).toEqual({
      plansPerMinute: 10,
      maxPending: 3,
      keys: { plansPerMinute: "limits.plansPerMinute", maxPending: "limits.agents.deploy-bot.maxPending" },
    });
    expect(limitsOf(config, "someone-else")).toMatchObject({ plansPerMinute: 10, maxPending: 100 });
  });

  it.each([
    [{ plansPerMinute: 0 }, "limits.plansPerMinute", "must be at least 1"],
    [{ maxPending: 2.5 }, "limits.maxPending", "must be a whole number of plans"],
    [{ maxPending: "10" }, "limits.maxPending", "must be a whole number of plans"],
    [{ agents: { "deploy-bot": { plansPerMinute: -1 } } }, "limits.agents.deploy-bot.plansPerMinute", "must be at least 1"],
    [{ agents: { "deploy-bot": { perMinute: 5 } } }, "limits.agents.deploy-bot.perMinute", "unknown key"],
    [{ perMinute: 5 }, "limits.perMinute", "unknown key"],
  ])("refuses %j naming %s", (limits, key, message) => {
    let error: unknown;
    try {
      limitsFromFile(limits);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([{ key, message: expect.stringContaining(message) }]);
  });
});

describe("agent limits: the rule", () => {
  const limits = limitsOf({ plansPerMinute: 60, maxPending: 100, agents: { "deploy-bot": { plansPerMinute: 5 } } }, "deploy-bot");

  it("lets an agent below both limits submit", () => {
    expect(limitVerdict("deploy-bot", limits, { ...idle, recent: 4, oldestRecentMs: NOW - 1000, open: 99 }, NOW)).toEqual([]);
  });

  it("at plansPerMinute, says when the oldest counted plan leaves the minute, in whole seconds, at least 1", () => {
    const [refusal] = limitVerdict("deploy-bot", limits, { ...idle, recent: 5, oldestRecentMs: NOW - 45_500 }, NOW);
    expect(refusal).toEqual({
      limit: "plansPerMinute",
      key: "limits.agents.deploy-bot.plansPerMinute",
      value: 5,
      retryAfterSeconds: 15,
      message: "agent deploy-bot submitted 5 plans in the last minute; limits.agents.deploy-bot.plansPerMinute is 5",
    });
    expect(limitVerdict("deploy-bot", limits, { ...idle, recent: 5, oldestRecentMs: NOW - 59_999 }, NOW)[0]?.retryAfterSeconds).toBe(1);
  });

  it("at maxPending, asks for 30 s, or less when a pending plan expires sooner", () => {
    expect(limitVerdict("deploy-bot", limits, { ...idle, open: 100 }, NOW)[0]).toMatchObject({
      limit: "maxPending",
      key: "limits.maxPending",
      retryAfterSeconds: 30,
    });
    expect(limitVerdict("deploy-bot", limits, { ...idle, open: 100, soonestExpiryMs: NOW + 7_200_000 }, NOW)[0]?.retryAfterSeconds).toBe(30);
    expect(limitVerdict("deploy-bot", limits, { ...idle, open: 100, soonestExpiryMs: NOW + 8_200 }, NOW)[0]?.retryAfterSeconds).toBe(9);
  });

  it("at both, the refusal names both and asks for the later retry", () => {
    const refusals = limitVerdict("deploy-bot", limits, { recent: 5, oldestRecentMs: NOW - 50_000, open: 100, soonestExpiryMs: null }, NOW);
    const err = rateLimited("deploy-bot", refusals);
    expect(err.code).toBe("rate_limited");
    expect(err.message).toBe(
      "agent deploy-bot submitted 5 plans in the last minute; limits.agents.deploy-bot.plansPerMinute is 5; and agent deploy-bot has 100 plans pending or approved; limits.maxPending is 100. Retry after 30 s.",
    );
    expect(err.details).toEqual({ retryAfterSeconds: 30, limit: "limits.agents.deploy-bot.plansPerMinute", value: 5 });
  });
});

describe("policy check", () => {
  it("prints the limits every agent has, and each agent's own, with the key each value comes from", () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "limits-")), "countersign.yml");
    writeFileSync(file, "defaults: { approvers: [U0ALICE] }\nlimits: { maxPending: 20, agents: { deploy-bot: { plansPerMinute: 5 } } }\n");
    const lines: string[] = [];
    policyCheck([file], {}, (l) => lines.push(l));
    expect(lines).toContain(
      "Agent limits: each agent 60 plans a minute (limits.plansPerMinute), 20 pending or approved at once (limits.maxPending); beyond them a submission is refused with 429 rate_limited",
    );
    expect(lines).toContain(
      "  agent deploy-bot: 5 plans a minute (limits.agents.deploy-bot.plansPerMinute), 20 pending or approved at once (limits.maxPending)",
    );
  });
});
