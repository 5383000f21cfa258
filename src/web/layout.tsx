/** @jsxRuntime automatic @jsxImportSource hono/jsx */
import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import type { WebSession } from "../service/sign-in/index.ts";

export const STYLESHEET = `
:root{--bg:#f6f7f9;--card:#fff;--ink:#111827;--muted:#6b7280;--line:#e5e7eb;--accent:#2563eb;--ok:#047857;--okbg:#ecfdf5;--bad:#b91c1c;--badbg:#fef2f2;--warn:#92400e;--warnbg:#fffbeb;--code:#f3f4f6}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--ink)}
a{color:var(--accent)}header.top{background:#111827;color:#fff;padding:.75rem 1.25rem;display:flex;gap:1rem;align-items:center;justify-content:space-between;flex-wrap:wrap}
header.top a{color:#fff;text-decoration:none;font-weight:600}header.top nav{display:flex;gap:1rem;align-items:baseline;flex-wrap:wrap}header.top a.sub{font-weight:400;color:#d1d5db}header.top .who{font-size:.9rem;color:#d1d5db;display:flex;gap:.5rem;align-items:center;min-width:0;white-space:nowrap}
header.top .who-name{min-width:0;overflow:hidden;text-overflow:ellipsis;color:#fff}header.top code.who-name{background:none}header.top .who form{flex:none}header.top button.sign-out{padding:.3rem .75rem;font-size:.85rem;white-space:nowrap}
main{max-width:1100px;margin:0 auto;padding:1.25rem}h1{font-size:1.45rem;margin:.2rem 0 .6rem;overflow-wrap:anywhere}h2{font-size:1.05rem;margin:1.5rem 0 .5rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:1rem 1.1rem;margin:.75rem 0}.card>h2:first-child,.card>p:first-child{margin-top:0}.narrow-only{display:none}
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
table.stacks{table-layout:fixed}table.stacks td{overflow-wrap:anywhere}col.field{width:24%}col.n{width:2.5rem}col.result{width:11rem}col.detail{width:35%}
a.button{display:inline-block;border-radius:8px;padding:.55rem 1.1rem;text-decoration:none}a.button.approve{background:var(--ok);color:#fff;font-weight:600}
.actions-bar{display:flex;gap:.75rem;flex-wrap:wrap;align-items:flex-start}form.inline{display:flex;gap:.5rem;flex-wrap:wrap;align-items:flex-start}
button{font:inherit;border-radius:8px;border:1px solid var(--line);padding:.55rem 1.1rem;cursor:pointer;background:#fff}button:focus-visible,a:focus-visible,textarea:focus-visible,select:focus-visible{outline:3px solid #93c5fd;outline-offset:2px}
button.approve{background:var(--ok);border-color:var(--ok);color:#fff;font-weight:600}button.reject{background:#fff;border-color:var(--bad);color:var(--bad);font-weight:600}
textarea{font:inherit;width:min(100%,28rem);min-height:2.6rem;padding:.45rem;border:1px solid var(--line);border-radius:8px}
.notice{padding:.7rem 1rem;border-radius:8px;margin:.75rem 0;border:1px solid}.notice.bad{background:var(--badbg);color:var(--bad);border-color:#fecaca}.notice.ok{background:var(--okbg);color:var(--ok);border-color:#a7f3d0}
.timeline{list-style:none;padding:0;margin:0}.timeline li{padding:.35rem 0;border-bottom:1px dashed var(--line)}.timeline time{color:var(--muted);font-size:.85rem;margin-right:.5rem}
.muted{color:var(--muted)}.hash{font-family:ui-monospace,monospace}.filters{display:flex;gap:.4rem;flex-wrap:wrap;margin:.5rem 0}.filters a{padding:.2rem .6rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;background:#fff}.filters a.on{background:#111827;color:#fff}
.verified,.nowrap{white-space:nowrap}.person-id{overflow-wrap:anywhere}
/* The decision stays at the bottom of the window, the diff scrolling above it; main leaves room for it at the end. */
.decision-bar{position:fixed;left:0;right:0;bottom:0;z-index:10;background:#fff;border-top:1px solid var(--line);box-shadow:0 -2px 10px rgba(17,24,39,.08)}
.decision-bar-inner{max-width:1100px;margin:0 auto;padding:.6rem 1.25rem calc(.6rem + env(safe-area-inset-bottom));display:flex;gap:.75rem;align-items:center}
.decision-bar .change-count{margin-right:auto;color:var(--ink);font-weight:600;white-space:nowrap}.decision-bar form.inline{flex-wrap:nowrap}
body:has(.decision-bar) main{padding-bottom:5.5rem}#reason{scroll-margin-bottom:6rem}
@media (max-width:640px){main{padding:.75rem}
/* The header stays one row: the lanes link and the reader's name give way (ellipsis) before Sign out does. */
header.top{padding:.5rem .75rem;flex-wrap:nowrap;gap:.5rem}header.top nav{flex-wrap:nowrap;gap:.75rem;min-width:0;flex:0 1 auto}header.top nav a{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;min-width:0}header.top nav a:first-child{flex:none}
header.top a.sub,header.top .who{font-size:.85rem}header.top .who{flex:0 1 auto}header.top .who-label,header.top .wide-only{display:none}header.top .narrow-only{display:inline}header.top button.sign-out{padding:.3rem .6rem}
.decision-bar-inner{padding:.5rem .75rem calc(.5rem + env(safe-area-inset-bottom));gap:.5rem}
table.plans td[data-label]{display:flex;gap:.5rem;align-items:baseline}table.plans td[data-label]::before{content:attr(data-label);flex:0 0 4.75rem;color:var(--muted);font:600 .75rem system-ui,sans-serif}table.plans td.no-expiry{display:none}.card{padding:.75rem}.meta{grid-template-columns:1fr}.meta dt{margin-top:.4rem}table.plans thead{display:none}table.plans tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}table.plans td{display:block;border:0;padding:.1rem .25rem}
/* On a phone a row becomes a small stack of labelled blocks: nothing to scroll sideways. */
table.stacks,table.stacks tbody{display:block}table.stacks thead,table.stacks colgroup{display:none}table.stacks tr{display:block;border-bottom:1px solid var(--line);padding:.4rem 0}table.stacks td{display:block;border:0;padding:.2rem .4rem;margin:.1rem 0}
table.stacks td[data-label]::before{content:attr(data-label);display:block;color:var(--muted);font:600 .75rem system-ui,sans-serif}table.stacks td:empty{display:none}
table.outcome td.n{font-weight:600}table.outcome td.n::before{content:"Action ";display:inline;font:inherit;color:inherit}}
`;

/** `seesLanes`: the person may see the delivery lanes page (outboxVisibility's rule), so the nav links it. */
export function Layout(props: { title: string; session?: WebSession | undefined; csrf?: string; seesLanes?: boolean | undefined; children: Child }) {
  // Without a doctype a browser lays the page out in quirks mode (forms gain a bottom margin, tables lose the body's font).
  return (
    <>
      {raw("<!DOCTYPE html>")}
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
                <a href="/lanes" class="sub" aria-label="Delivery lanes">
                  <span class="wide-only">Delivery lanes</span>
                  <span class="narrow-only">Lanes</span>
                </a>
              ) : null}
            </nav>
            {props.session ? (
              <span class="who">
                <span class="who-label">Signed in as</span>
                {props.session.name ? (
                  <strong class="who-name" title={props.session.userId}>
                    {props.session.name}
                  </strong>
                ) : (
                  <code class="who-name">{props.session.userId}</code>
                )}
                <form method="post" action="/logout" class="inline">
                  <input type="hidden" name="_csrf" value={props.session.csrfToken} />
                  <button type="submit" class="sign-out">
                    Sign out
                  </button>
                </form>
              </span>
            ) : (
              <span class="who">Not signed in</span>
            )}
          </header>
          <main>{props.children}</main>
        </body>
      </html>
    </>
  );
}

export function StatusBadge(props: { status: string }) {
  return <span class={`badge s-${props.status}`}>{props.status}</span>;
}
