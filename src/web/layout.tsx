/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import type { WebSession } from "../service/sign-in/index.ts";

export const STYLESHEET = `
:root{--bg:#f6f7f9;--card:#fff;--ink:#111827;--muted:#6b7280;--line:#e5e7eb;--accent:#2563eb;--ok:#047857;--okbg:#ecfdf5;--bad:#b91c1c;--badbg:#fef2f2;--warn:#92400e;--warnbg:#fffbeb;--code:#f3f4f6}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink)}
a{color:var(--accent)}header.top{background:#111827;color:#fff;padding:.75rem 1.25rem;display:flex;gap:1rem;align-items:center;justify-content:space-between;flex-wrap:wrap}
header.top a{color:#fff;text-decoration:none;font-weight:600}header.top nav{display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}header.top a.sub{font-weight:400;color:#d1d5db}header.top .who{font-size:.9rem;color:#d1d5db;display:flex;gap:.75rem;align-items:center;flex-wrap:wrap;min-width:0;overflow-wrap:anywhere}
main{max-width:1100px;margin:0 auto;padding:1.25rem}h1{font-size:1.45rem;margin:.2rem 0 .6rem;overflow-wrap:anywhere}h2{font-size:1.05rem;margin:1.5rem 0 .5rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1rem 1.1rem;margin:.75rem 0}.card>h2:first-child{margin-top:0}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}.meta dt{color:var(--muted)}.meta dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:.1rem .55rem;border-radius:999px;font-size:.8rem;font-weight:600;border:1px solid transparent;white-space:nowrap}
.s-pending{background:var(--warnbg);color:var(--warn);border-color:#fde68a}.s-approved,.s-executing{background:#eff6ff;color:#1d4ed8;border-color:#bfdbfe}
.s-applied{background:var(--okbg);color:var(--ok);border-color:#a7f3d0}.s-rejected,.s-failed,.s-stale,.s-revoked{background:var(--badbg);color:var(--bad);border-color:#fecaca}
.risk-low{background:#f3f4f6;color:#374151}.risk-medium{background:var(--warnbg);color:var(--warn)}.risk-high{background:var(--badbg);color:var(--bad);border-color:#fecaca}
.s-expired,.s-cancelled,.s-superseded{background:#f3f4f6;color:#4b5563;border-color:#e5e7eb}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}th{color:var(--muted);font-weight:600;font-size:.85rem}
.plans td{overflow-wrap:anywhere}.mine{font-weight:600;color:var(--accent)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}pre{background:var(--code);padding:.6rem;border-radius:6px;overflow:auto;max-height:28rem;white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0}
.diff td.before{background:var(--badbg)}.diff td.after{background:var(--okbg)}.diff td{font-family:ui-monospace,monospace;font-size:.85rem;white-space:pre-wrap}
/* Fixed layout: columns take their share of the card, not their longest token, so a long value wraps inside its cell (at a break point when one fits, mid-token only when nothing else fits) instead of widening the page. */
table.stacks{table-layout:fixed}table.stacks td{overflow-wrap:anywhere}col.field{width:24%}col.n{width:2.5rem}col.result{width:7rem}col.detail{width:35%}
a.button{display:inline-block;border-radius:8px;padding:.55rem 1.1rem;text-decoration:none}a.button.approve{background:var(--ok);color:#fff;font-weight:600}
.actions-bar{display:flex;gap:.75rem;flex-wrap:wrap;align-items:flex-start}form.inline{display:flex;gap:.5rem;flex-wrap:wrap;align-items:flex-start}
button{font:inherit;border-radius:8px;border:1px solid var(--line);padding:.55rem 1.1rem;cursor:pointer;background:#fff}button:focus-visible,a:focus-visible,textarea:focus-visible,select:focus-visible{outline:3px solid #93c5fd;outline-offset:2px}
button.approve{background:var(--ok);border-color:var(--ok);color:#fff;font-weight:600}button.reject{background:#fff;border-color:var(--bad);color:var(--bad);font-weight:600}
textarea{font:inherit;width:min(100%,28rem);min-height:2.6rem;padding:.45rem;border:1px solid var(--line);border-radius:8px}
.notice{padding:.7rem 1rem;border-radius:8px;margin:.75rem 0;border:1px solid}.notice.bad{background:var(--badbg);color:var(--bad);border-color:#fecaca}.notice.ok{background:var(--okbg);color:var(--ok);border-color:#a7f3d0}
.timeline{list-style:none;padding:0;margin:0}.timeline li{padding:.35rem 0;border-bottom:1px dashed var(--line)}.timeline time{color:var(--muted);font-size:.85rem;margin-right:.5rem}
.muted{color:var(--muted)}.hash{font-family:ui-monospace,monospace}.filters{display:flex;gap:.4rem;flex-wrap:wrap;margin:.5rem 0}.filters a{padding:.2rem .6rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;background:#fff}.filters a.on{background:#111827;color:#fff}
@media (max-width:640px){main{padding:.75rem}.card{padding:.75rem}.meta{grid-template-columns:1fr}.meta dt{margin-top:.4rem}table.plans thead{display:none}table.plans tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}table.plans td{display:block;border:0;padding:.1rem .25rem}
/* On a phone a row becomes a small stack of labelled blocks: nothing to scroll sideways. */
table.stacks,table.stacks tbody{display:block}table.stacks thead,table.stacks colgroup{display:none}table.stacks tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}table.stacks td{display:block;border:0;padding:.2rem .4rem;margin:.1rem 0}
table.stacks td[data-label]::before{content:attr(data-label);display:block;color:var(--muted);font:600 .75rem system-ui,sans-serif}table.stacks td:empty,table.outcome td.n{display:none}}
`;

/** `seesLanes`: the person may see the delivery lanes page (outboxVisibility's rule), so the nav links it. */
export function Layout(props: { title: string; session?: WebSession | undefined; csrf?: string; seesLanes?: boolean | undefined; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} · Countersign</title>
        <link rel="stylesheet" href="/assets/app.css" />
        <script src="/assets/app.js" defer></script>
      </head>
      <body>
        <header class="top">
          <nav class="top-links">
            <a href="/plans">Countersign</a>
            {props.seesLanes ? (
              <a href="/lanes" class="sub">
                Delivery lanes
              </a>
            ) : null}
          </nav>
          {props.session ? (
            <span class="who">
              Signed in as <strong>{props.session.name ?? props.session.userId}</strong> <code>{props.session.userId}</code>
              <form method="post" action="/logout" class="inline">
                <input type="hidden" name="_csrf" value={props.session.csrfToken} />
                <button type="submit">Sign out</button>
              </form>
            </span>
          ) : (
            <span class="who">Not signed in</span>
          )}
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge s-${props.status}`}>{props.status}</span>;
}
