// The console's only script, served as a file (the CSP allows no inline script).
// It listens to the project's voice (GET /console/live, the session's cookie) and, on each
// change, fetches this same page again and swaps in its live regions ([data-live-region] with
// an id). The fetched HTML is the server's own escaped page, parsed with DOMParser (which runs
// no script) and moved in as nodes: never a string assigned to innerHTML.
"use strict";
(function () {
  const url = document.body.dataset.live;
  const status = document.getElementById("live-status");
  if (!url || !window.EventSource) return;
  let pending = null;
  function refresh() {
    if (pending) return;
    pending = setTimeout(async function () {
      pending = null;
      let text;
      try {
        const answer = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
        if (!answer.ok || answer.redirected) return;
        text = await answer.text();
      } catch (e) { return; }
      const fresh = new DOMParser().parseFromString(text, "text/html");
      document.querySelectorAll("[data-live-region][id]").forEach(function (old) {
        const next = fresh.getElementById(old.id);
        if (!next) return;
        const adopted = document.importNode(next, true);
        old.replaceWith(adopted);
        adopted.classList.add("flash");
      });
      document.body.dataset.liveRefreshes = String(Number(document.body.dataset.liveRefreshes || "0") + 1);
    }, 150);
  }
  const source = new EventSource(url);
  source.addEventListener("connected", function () {
    if (status) { status.textContent = "live"; status.classList.add("on"); }
    document.body.dataset.liveConnected = "true";
  });
  source.addEventListener("change", function (event) {
    let change = {};
    try { change = JSON.parse(event.data); } catch (e) { return; }
    if (status) status.textContent = "live: " + String(change.kind || "change");
    refresh();
  });
  source.onerror = function () {
    if (status) { status.textContent = "reconnecting"; status.classList.remove("on"); }
    document.body.dataset.liveConnected = "false";
  };
})();
