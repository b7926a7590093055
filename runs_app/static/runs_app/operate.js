// Live progress on a run's page: asks progress.json every few seconds and updates the figures,
// the notice and the controls in place. Without JavaScript the page is the same, refreshed by
// its link. No library: a fetch, and the text of a few cells.
(function () {
  "use strict";
  var root = document.getElementById("run");
  if (!root || !window.fetch) { return; }
  var url = root.dataset.progressUrl;
  var every = Number(root.dataset.pollMs) || 2000;

  function setText(scope, field, value) {
    scope.querySelectorAll('[data-field="' + field + '"]').forEach(function (node) {
      if (node.textContent !== String(value)) { node.textContent = value; }
    });
  }

  function showActions(scope, actions) {
    if (!scope) { return; }
    scope.querySelectorAll("form[data-action]").forEach(function (form) {
      form.hidden = actions.indexOf(form.dataset.action) === -1;
    });
  }

  function apply(data) {
    var notice = root.querySelector('[data-field="notice"]');
    notice.textContent = data.notice;
    notice.hidden = !data.notice;
    setText(document, "status_label", data.status_label);
    setText(document, "spent", data.spent_display);
    setText(root, "workers-running", data.workers.running);
    setText(root, "workers-queued", data.workers.queued);
    setText(root, "workers-alive", data.workers.text);
    root.querySelectorAll('[data-field="workers-alive"]').forEach(function (node) {
      var alive = data.workers.alive;
      node.dataset.alive = alive === null ? "unknown" : (alive ? "yes" : "no");
    });
    setText(root, "updated", "as of " + data.updated_at.slice(11, 19) + " UTC");
    showActions(root.querySelector(".release-actions"), data.actions);
    data.stages.forEach(function (stage) {
      var row = root.querySelector('tr[data-stage="' + stage.stage + '"]');
      if (!row) { return; }
      row.dataset.state = stage.state;
      Object.keys(stage.display).forEach(function (field) {
        setText(row, field, stage.display[field]);
      });
      showActions(row, stage.actions);
    });
    root.dataset.polls = String(Number(root.dataset.polls || 0) + 1);
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin",
                 cache: "no-store", redirect: "error" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) { apply(data); root.dataset.live = "on"; })
      // A failed poll (a restart, a lost session) leaves the figures as they were; the next
      // one tries again, and the refresh link still works.
      .catch(function () { root.dataset.live = "off"; })
      .then(function () { window.setTimeout(poll, every); });
  }

  var note = root.querySelector("[data-live-note]");
  if (note) { note.hidden = false; }
  window.setTimeout(poll, every);
}());
