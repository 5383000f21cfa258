/** Agents: adding, listing, revoking, authenticating them, and their submission limits. What a door may call lives here; the files beside it are this capability's own. */
export { addAgent } from "./add-agent.ts";
export type { ReadUsage } from "./agent-limits.ts";
export { authenticateAgent, authenticateAgentForSubmit } from "./authenticate-agent.ts";
export type { AgentIdentity } from "./authenticate-agent.ts";
export { listAgents } from "./list-agents.ts";
export type { AgentSummary } from "./list-agents.ts";
export { revokeAgent } from "./revoke-agent.ts";
