// The run page's chain, live: when a run event concerns a run of the chain (or a new
// run whose parent is in it), fetch the chain partial again and swap it in.
// It listens on the live log's socket (view=log); rows carry data-run / data-parent.
(function () {
  "use strict";

  var pending = null;

  function section() { return document.querySelector("[data-run-chain]"); }

  function known(el) {
    return (el.getAttribute("data-chain-ids") || "").split(",").filter(Boolean);
  }

  function refresh() {
    var el = section();
    if (!el) return;
    fetch(el.getAttribute("data-run-chain"), { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) return;
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.querySelector("[data-run-chain]");
        var current = section();
        if (!fresh || !current) return;
        // The socket's state belongs to the page, not to the partial: keep it.
        var live = current.getAttribute("data-live");
        if (live) fresh.setAttribute("data-live", live);
        current.replaceWith(fresh);
      });
  }

  function later() {
    if (pending === null) pending = setTimeout(function () { pending = null; refresh(); }, 150);
  }

  function concerns(html, ids) {
    var doc = new DOMParser().parseFromString("<table>" + html + "</table>", "text/html");
    var rows = doc.querySelectorAll("[data-run]");
    for (var i = 0; i < rows.length; i++) {
      if (ids.indexOf(rows[i].getAttribute("data-run")) !== -1) return true;
      if (ids.indexOf(rows[i].getAttribute("data-parent")) !== -1) return true;
    }
    return false;
  }

  function connect(path) {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + location.host + path + "?view=log");
    socket.onopen = function () {
      var el = section();
      if (el) el.setAttribute("data-live", "on");
      refresh(); // whatever changed before the socket opened
    };
    socket.onmessage = function (message) {
      var el = section();
      if (el && concerns(message.data, known(el))) later();
    };
    socket.onclose = function () {
      var el = section();
      if (el) el.setAttribute("data-live", "off");
      setTimeout(function () { connect(path); }, 2000);
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    var el = section();
    if (el && el.getAttribute("data-socket")) connect(el.getAttribute("data-socket"));
  });
})();
