/**
 * The pages' only script, served from our own origin (the CSP allows nothing else): live
 * countdowns, live updates over server-sent events that swap in a fresh copy of the part
 * of the page that changed, without a reload, and an edit form that sends only what was changed.
 */
export const APP_SCRIPT = `
(function () {
  function tick() {
    document.querySelectorAll('[data-expires]').forEach(function (el) {
      var left = Math.round((Date.parse(el.getAttribute('data-expires')) - Date.now()) / 1000);
      if (left <= 0) { el.textContent = 'expired'; return; }
      var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
      el.textContent = (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + s + 's left';
    });
  }
  function live() {
    var region = document.querySelector('[data-live]');
    if (!region || !window.EventSource) return;
    var source = new EventSource(region.getAttribute('data-live'));
    var busy = false, again = false;
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch(region.getAttribute('data-fragment'), { credentials: 'same-origin' })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) { region.innerHTML = html; tick(); } })
        .finally(function () { busy = false; if (again) { again = false; refresh(); } });
    }
    source.addEventListener('changed', refresh);
  }
  // An edit posts only the values changed, so a plan with many values stays within the form cap.
  document.addEventListener('submit', function (e) {
    var form = e.target;
    if (!form.hasAttribute || !form.hasAttribute('data-edit-values')) return;
    form.querySelectorAll('textarea[data-original]').forEach(function (t) {
      if (t.value === t.getAttribute('data-original')) t.disabled = true;
    });
  });
  document.addEventListener('DOMContentLoaded', function () { tick(); setInterval(tick, 1000); live(); });
})();
`;
