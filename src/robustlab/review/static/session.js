// robustlab review: tie the session to the browser that logged in (loaded first, on every page).
//
// This browser's key is a random value kept in its local storage (made on first use). The
// login form sends it, and the server records it in the session's signed cookie; every form
// that posts carries it again, and the page's script sends it with every save. A page served
// for a session this browser did not log in to (a planted cookie: someone else's session)
// tells a different key: the page is left at once for the login (/?unknown=1), so nobody ever
// works in an account they did not log in to. Local storage cannot be written from another
// site, unlike a cookie.
(function () {
  "use strict";
  var KEY = "robustlab-review-browser";
  var SAFE_NEXT = /^\/(review|admin|admin\/pair)(\?task=\d{1,9})?$/;

  function browserKey() {
    var store = null;
    try { store = window.localStorage; } catch (e) { return ""; }
    if (!store) { return ""; }
    var key = store.getItem(KEY) || "";
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(key)) {
      var bytes = new Uint8Array(16);
      window.crypto.getRandomValues(bytes);
      key = Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
      try { store.setItem(KEY, key); } catch (e) { return ""; }
    }
    return key;
  }

  var key = browserKey();
  window.robustlabBrowserKey = key;
  var bound = document.body.getAttribute("data-browser");
  if (bound !== null && (!key || bound !== key)) {
    document.body.setAttribute("data-unknown-session", "yes");   // review.js does nothing on this page
    var here = location.pathname + location.search;
    location.replace("/?unknown=1" + (SAFE_NEXT.test(here) ? "&next=" + encodeURIComponent(here) : ""));
    return;
  }
  var field = document.getElementById("browser-key");   // the login form's
  if (field) { field.value = key; }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || String(form.method).toLowerCase() !== "post") { return; }
    var input = form.querySelector('input[name="browser"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "browser";
      form.appendChild(input);
    }
    input.value = key;
  }, true);
})();
