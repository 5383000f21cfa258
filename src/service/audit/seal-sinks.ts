import { appendFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { DeliveryError, type OutboxHandler } from "../delivery/sink-contract.ts";
import type { PublishedSeal } from "./seal-signature.ts";

const TIMEOUT_MS = 10_000;

/** One line of the seals file: the published seal as JSON, what `audit verify --seals` reads back. */
export const sealLine = (seal: PublishedSeal): string => JSON.stringify(seal) + "\n";

/**
 * The "audit_seal.file" sink: appends each signed seal to `audit.seal.file` as one JSON line. A
 * crash between the append and the outbox's mark can repeat a line; verify accepts a repeat that
 * is identical and refuses two different seals under one seq.
 */
export function sealFileSink(file: string): OutboxHandler {
  return async (payload) => {
    try {
      await mkdir(path.dirname(path.resolve(file)), { recursive: true });
      await appendFile(file, sealLine(payload as unknown as PublishedSeal), "utf8");
    } catch (err) {
      throw new DeliveryError(`appending a signed audit seal to ${file} failed: ${(err as Error).message}`);
    }
  };
}

/** The "audit_seal.webhook" sink: POSTs each signed seal as JSON to `audit.seal.webhookUrl`. The signature is its own proof. */
export function sealWebhookSink(url: string, fetchImpl: typeof fetch = fetch): OutboxHandler {
  return async (payload) => {
    const host = new URL(url).host;
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "Countersign-Audit-Seals" },
        body: JSON.stringify(payload),
        redirect: "manual",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new DeliveryError(`publishing a signed audit seal to ${host} failed: ${(err as Error).message}`);
    }
    await response.body?.cancel();
    if (!response.ok) throw new DeliveryError(`publishing a signed audit seal to ${host}: HTTP ${response.status}`);
  };
}
