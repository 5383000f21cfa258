/** The audit log's seals: signing, publishing and verifying them, and exporting the log. What a door may call lives here; the files beside it are this capability's own. */
export { exportAudit } from "./export-audit.ts";
export { sealAudit } from "./seal-audit.ts";
export { loadSealKey, loadSealPublicKeys, samePublicKey } from "./seal-signature.ts";
export type { PublishedSeal } from "./seal-signature.ts";
export { sealFileSink, sealWebhookSink } from "./seal-sinks.ts";
export { SEAL_SINKS, signSeals } from "./sign-seals.ts";
export type { SealSigning } from "./sign-seals.ts";
export { verifyAudit } from "./verify-audit.ts";
export type { AuditProblem, AuditVerdict } from "./verify-audit.ts";
export { parseSealsFile, sealsVerdictLines, verifySeals } from "./verify-seals.ts";
export type { SealsVerdict } from "./verify-seals.ts";
