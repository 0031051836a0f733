// Sillo Dash: small helpers around htmx. No framework.
(function () {
  "use strict";

  // Tell the server the operator's zone, so pages show times in it.
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone && document.cookie.indexOf("tz=" + zone) === -1) {
    document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax";
  }

  function human(seconds) {
    var s = Math.abs(Math.round(seconds));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-relative]").forEach(function (el) {
      var delta = (Date.parse(el.getAttribute("datetime")) - now) / 1000;
      el.textContent = delta >= 0 ? "in " + human(delta) : human(delta) + " ago";
    });
    document.querySelectorAll("[data-elapsed-since]").forEach(function (el) {
      el.textContent = human((now - Date.parse(el.getAttribute("data-elapsed-since"))) / 1000);
    });
  }

  function socketState(text, level) {
    var el = document.getElementById("ws-state");
    if (el) { el.textContent = text; el.className = "badge " + level; }
  }

  // <select data-autosubmit> submits its form on change (no inline handlers: CSP).
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el && el.matches && el.matches("select[data-autosubmit]") && el.form) el.form.submit();
  });

  // The run page's live output (tail -f): keep the newest text in view while the
  // reader is at the bottom, and hold at most OUTPUT_KEEP characters in the page.
  var OUTPUT_KEEP = 2000000;
  var pinned = true;
  document.addEventListener("scroll", function (event) {
    var el = event.target;
    if (el && el.id === "run-output") pinned = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
  }, true);
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var el = (event.detail && event.detail.target) || event.target;
    if (!el || el.id !== "run-output") return;
    var text = el.textContent;
    if (text.length > OUTPUT_KEEP) {
      el.textContent = "… [older output dropped from this page] …\n" + text.slice(text.length - OUTPUT_KEEP);
    }
    if (pinned) el.scrollTop = el.scrollHeight;
  });

  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSettle", tick);
  document.addEventListener("htmx:wsOpen", function () { socketState("live", "s-succeeded"); });
  document.addEventListener("htmx:wsClose", function () { socketState("reconnecting…", "s-failed"); });
  setInterval(tick, 1000);
})();
