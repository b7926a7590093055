// A page that answered a form's POST (the arena's vote answers with the next pair) puts the
// address of the page it shows in the browser's history: reloading it then asks for that page
// by GET, and never sends the form again. Without JavaScript a reload sends the form again,
// which the server refuses (a vote is recorded once).
(function () {
  const url = document.currentScript && document.currentScript.dataset.url;
  if (url && window.history && window.history.replaceState) {
    window.history.replaceState(null, "", url);
  }
})();
