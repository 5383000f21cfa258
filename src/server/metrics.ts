import { Hono } from "hono";
import { Counter, Gauge, Registry } from "prom-client";
import type { ServiceContext } from "../service/context.ts";
import { readMetrics, type HistogramSnapshot, type MetricsSnapshot } from "../service/operations/index.ts";
import { bearerMatches } from "../util/bearer.ts";

/**
 * `GET /metrics` in Prometheus text format. With a token (COUNTERSIGN_METRICS_TOKEN) a scrape must
 * present it as a bearer (compared in constant time); without one the endpoint is open, like
 * /healthz, for a scraper on a private network.
 */
export function metricsRoutes(ctx: Pick<ServiceContext, "database" | "clock" | "config">, token: string | undefined): Hono {
  const app = new Hono();
  app.get("/metrics", async (c) => {
    if (token !== undefined && !bearerMatches(c.req.header("authorization"), token)) {
      return c.json({ error: { code: "unauthorized", message: "GET /metrics needs Authorization: Bearer <COUNTERSIGN_METRICS_TOKEN>" } }, 401, {
        "www-authenticate": "Bearer",
      });
    }
    const registry = registryOf(await readMetrics(ctx));
    return c.body(await registry.metrics(), 200, { "content-type": registry.contentType });
  });
  return app;
}

/** The snapshot as a prom-client registry made for this one scrape (nothing is kept in the process). */
export function registryOf(m: MetricsSnapshot): Registry {
  const registry = new Registry();
  const registers = [registry];
  const plans = new Counter({
    name: "countersign_plans_total",
    help: "Plans that reached each status (pending: submitted; a takeover enters executing again)",
    labelNames: ["status"],
    registers,
  });
  for (const p of m.plansTotal) plans.inc({ status: p.status }, p.count);
  new Gauge({ name: "countersign_pending_plans", help: "Plans waiting for a decision now", registers }).set(m.pendingPlans);
  new Gauge({
    name: "countersign_executors_connected",
    help: "Executors waiting for work or seen within executor.missingAfterSeconds; at 0 approved plans are not applied",
    registers,
  }).set(m.executorsConnected);
  histogram(registry, "countersign_time_to_decision_seconds", "Seconds from submission to the approval or rejection that ended the review", m.timeToDecision);
  const decisions = new Counter({
    name: "countersign_decisions_total",
    help: "Decisions people made, by verdict and door (an approval vote each; a rejection ends the plan)",
    labelNames: ["verdict", "via"],
    registers,
  });
  for (const d of m.decisionsTotal) decisions.inc({ verdict: d.verdict, via: d.via }, d.count);
  const refusals = new Counter({ name: "countersign_refusals_total", help: "Requests refused, by error code", labelNames: ["code"], registers });
  for (const r of m.refusalsTotal) refusals.inc({ code: r.code }, r.count);
  histogram(registry, "countersign_apply_seconds", "Seconds from approval to the executor reporting the plan applied", m.apply);
  const backlog = new Gauge({
    name: "countersign_outbox_backlog",
    help: "Side effects waiting to be delivered, by outbox lane",
    labelNames: ["lane"],
    registers,
  });
  const oldest = new Gauge({
    name: "countersign_outbox_oldest_seconds",
    help: "Age in seconds of the oldest undelivered side effect, by outbox lane",
    labelNames: ["lane"],
    registers,
  });
  for (const l of m.lanes) {
    backlog.set({ lane: l.lane }, l.backlog);
    oldest.set({ lane: l.lane }, l.oldestSeconds);
  }
  const expired = new Counter({
    name: "countersign_expired_total",
    help: "Plans expired, by the status they expired from (pending: nobody decided in time)",
    labelNames: ["from"],
    registers,
  });
  for (const e of m.expiredTotal) expired.inc({ from: e.from }, e.count);
  return registry;
}

/** prom-client's Histogram only observes values one by one; these counts come from the database whole. */
function histogram(registry: Registry, name: string, help: string, h: HistogramSnapshot): void {
  const values = [
    ...h.buckets.map((b) => ({ metricName: `${name}_bucket`, labels: { le: b.le }, value: b.count })),
    { metricName: `${name}_bucket`, labels: { le: "+Inf" }, value: h.count },
    { metricName: `${name}_sum`, labels: {}, value: h.sum },
    { metricName: `${name}_count`, labels: {}, value: h.count },
  ];
  const metric = { name, help, type: "histogram", aggregator: "sum", get: async () => ({ name, help, type: "histogram", aggregator: "sum", values }) };
  registry.registerMetric(metric as never);
}
