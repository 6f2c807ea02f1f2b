// robustlab review: the keyboard, and the rules that keep an answer the one the annotator gave.
// Plain JavaScript, no build step (docs/review.md lists every key). session.js runs first.
//
// - The answer form is inert until both frames are decoded; from Enter until the next task is
//   fully shown, keys are ignored (and the page says it is loading), so typing ahead on a slow
//   network never lands on the wrong task.
// - The form shows only what the server rendered: the browser's form restoration (Back, the
//   back/forward cache) is undone, and a page restored from that cache is reloaded.
// - Focus stays in the form (Tab cycles in it); Enter always saves the answer, never logs out.
// - Drafts: the choices made on a task are kept in this tab (sessionStorage), with the version
//   of the answer they were made on. Enter sends them (fetch); until the server confirms the
//   save, the draft is kept as "not saved". A save lost to Back, a network failure, a logout or
//   a new login in another tab is offered again with a notice: on its task (filled in, labelled
//   as a draft), and on every other page (a link to it), unless the server has that very answer.
//   A draft is filled in only on the version it was made on; when the task changed since, the
//   page shows the task as it is now and offers the draft (button or R). After a login the page
//   saves the answer given before it. A reload restores unsaved choices of that task only.
(function () {
  "use strict";
  var DRAFTS = "robustlab-review-drafts";
  var POLL_MS = 20000;
  var REASON_WORDS = { motion: "significant motion", background_change: "background change",
                       blur_change: "blur change", other: "other" };
  var WORDS = { yes: "yes", no: "no", unsure: "don't know", similar: "similar", dissimilar: "dissimilar" };
  var page = document.body.getAttribute("data-page");
  if (document.body.getAttribute("data-unknown-session") === "yes") { return; }   // leaving for the login

  // --- drafts: {"user|round|task": {user, round, task, what, base, fields, pending, after, why}} ---------
  function tabStore() {
    try { return window.sessionStorage; } catch (e) { return null; }
  }
  function readDrafts() {
    var s = tabStore();
    if (!s) { return {}; }
    try {
      var all = JSON.parse(s.getItem(DRAFTS) || "{}");
      return all && typeof all === "object" ? all : {};
    } catch (e) { return {}; }
  }
  function writeDrafts(all) {
    var s = tabStore();
    if (!s) { return; }
    try {
      if (Object.keys(all).length) { s.setItem(DRAFTS, JSON.stringify(all)); } else { s.removeItem(DRAFTS); }
    } catch (e) { /* storage full or off: the page still works, without drafts */ }
  }
  function draftId(user, round, task) { return user + "|" + round + "|" + task; }
  function putDraft(d) { var all = readDrafts(); all[draftId(d.user, d.round, d.task)] = d; writeDrafts(all); }
  function dropDraft(id) { var all = readDrafts(); delete all[id]; writeDrafts(all); }

  // An answer in one comparable form: label, similarity, reason, added class numbers (sorted);
  // null when typed class names make it unknown here.
  function canonical(label, similarity, reason, added) {
    return JSON.stringify([label || null, similarity || null, reason || null, added.slice().sort(function (a, b) { return a - b; })]);
  }
  function canonicalFields(f) {
    var added = (f.added_labels || []).map(Number);
    var typed = ((f.added_labels_text || [])[0] || "").split(/[,;]/);
    for (var i = 0; i < typed.length; i++) {
      var t = typed[i].trim();
      if (!t) { continue; }
      if (!/^\d{1,9}$/.test(t)) { return null; }
      if (added.indexOf(Number(t)) < 0) { added.push(Number(t)); }
    }
    return canonical((f.label_correct || [])[0], (f.similarity || [])[0], (f.reason || [])[0], added);
  }
  function canonicalSaved(a) {
    return a ? canonical(a.label_correct, a.similarity, a.reason, a.added_labels || []) : null;
  }
  function describe(f) {
    var parts = [];
    if (f.label_correct) { parts.push("label " + WORDS[f.label_correct[0]]); }
    if (f.similarity) { parts.push(WORDS[f.similarity[0]]); }
    if (f.reason) { parts.push(REASON_WORDS[f.reason[0]]); }
    return parts.join(", ") || "no choice";
  }

  if (page === "admin") {
    adminPage();
  } else if (page === "review") {
    reviewPage();
  }

  // --- the admin page: refresh by itself while nobody is using a form -----------------------------------
  function adminPage() {
    var seconds = parseInt(document.body.getAttribute("data-refresh-seconds"), 10) || 30;
    setInterval(function () {
      var active = document.activeElement;
      if (document.visibilityState !== "visible" || (active && active.closest && active.closest("form"))) { return; }
      var refresh = new URLSearchParams(location.search).get("refresh");
      location.replace(location.pathname + (refresh ? "?refresh=" + encodeURIComponent(refresh) : ""));
    }, seconds * 1000);
  }

  // --- the annotator page --------------------------------------------------------------------------------------
  function reviewPage() {
    var form = document.getElementById("answer-form");
    var undoForm = document.getElementById("undo-form");
    var undoButton = document.getElementById("undo");
    var stateLine = document.getElementById("page-state");
    var keysLine = document.getElementById("keys");
    var history = document.getElementById("history");
    var messageLine = document.getElementById("message");
    var lostBox = document.getElementById("lost-answers");
    var round = document.body.getAttribute("data-round");
    var user = document.body.getAttribute("data-user");
    var ready = !form;          // the form takes keys only once both frames are shown
    var busy = false;           // from Enter (or Z) until the next page replaces this one
    var inHistory = false;
    var pressed = [];
    var LETTERS = { y: ["label_correct", "yes"], n: ["label_correct", "no"], m: ["label_correct", "unsure"],
                    s: ["similarity", "similar"], d: ["similarity", "dissimilar"], k: ["similarity", "unsure"] };
    var KEY_NAMES = { enter: "\u23ce", escape: "Esc" };

    window.addEventListener("pageshow", function (event) {
      if (event.persisted) { location.reload(); }   // from the back/forward cache: ask the server again
    });
    watchRound();

    function setState(text, kind) {
      if (!stateLine) { return; }
      stateLine.textContent = text;
      stateLine.className = "state" + (kind ? " " + kind : "");
    }
    function record(label, ignored) {
      if (!keysLine) { return; }
      pressed.push(label);
      var shown = pressed.slice(-12).join(" ");
      keysLine.textContent = ignored ? shown + "  (" + ignored + ")" : shown;
    }

    if (!form) {
      forgetUnsent(null);
      showLost(null);
      document.addEventListener("keydown", function (event) {
        if (plainKey(event) && event.key.toLowerCase() === "z") { event.preventDefault(); undo(); }
        else if (plainKey(event) && event.key.toLowerCase() === "h") { event.preventDefault(); enterHistory(); }
      });
      return;
    }

    var task = form.getAttribute("data-task");
    var id = draftId(user, round, task);
    var textInput = document.getElementById("added-labels-text");
    var boxes = form.querySelectorAll('input[type="checkbox"][name="added_labels"]');
    var baseInput = form.querySelector('input[name="base"]');
    var pageBase = baseInput.value;
    var offered = null;          // a draft made on an older version of this task, offered (R)

    // 1. only what the server rendered (the saved answer, an undone one, or the anchor step's label)
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.type === "radio" || el.type === "checkbox") { el.checked = el.defaultChecked; }
      else if (el.type === "text") { el.value = el.defaultValue; }
    });
    syncReason();
    var rendered = canonicalFields(fields());

    // 2. this tab's draft of this task: a save that did not go through, or (reload) unsaved choices
    var draft = readDrafts()[id];
    var autoSave = false;
    var nav = window.performance && performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
    forgetUnsent(id);
    if (draft) {
      if (form.getAttribute("data-saved") === "yes" && canonicalFields(draft.fields) === rendered) {
        dropDraft(id);                   // the server has this very answer: it was saved
      } else if (form.getAttribute("data-error") === "yes") {
        draft.pending = false;           // the server refused it and says why; the choices are shown again
        putDraft(draft);
      } else if (draft.pending && draft.after === "login" && draft.base === pageBase) {
        draft.after = "";                // saved once, now: never again by itself
        putDraft(draft);
        applyDraft(draft, "The answer you gave before logging in is filled in (not saved yet): saving it now ...");
        autoSave = true;
      } else if (draft.pending) {
        offer(draft, draft.why === "session"
          ? "Not saved: the session changed (a logout or a new login, e.g. in another tab) before this answer reached the server."
          : "Not saved: this answer did not reach the server (the page was left while it was being saved, or the network failed).");
      } else if (nav && nav.type === "reload") {
        offer(draft, "Draft restored after the reload.");
      } else {
        dropDraft(id);
      }
    }
    showLost(id);

    // 3. inert until both frames are decoded and painted
    var images = document.querySelectorAll("#frames img");
    Promise.all(Array.prototype.map.call(images, function (img) { return img.decode(); })).then(function () {
      requestAnimationFrame(function () {
        requestAnimationFrame(function () {
          form.inert = false;
          ready = true;
          form.focus({ preventScroll: true });
          if (autoSave) {
            setState("Saving the answer you gave before logging in ...", "busy");
            form.requestSubmit();
          } else {
            setState("Ready", "ready");
          }
        });
      });
    }, function () {
      setState("A frame could not be loaded: reload the page (F5) before answering.", "failed");
    });

    form.addEventListener("submit", function (event) {
      event.preventDefault();            // the script sends it, and keeps it until the server confirms
      if (!ready || busy) { return; }
      send();
    });
    form.addEventListener("change", function (event) {
      if (event.target.name === "reason" && event.target.checked) {
        radio("similarity", "dissimilar").checked = true;
      }
      if (event.target.name === "added_labels") { syncTextFromBoxes(); }
      syncReason();
      saveDraft();
    });
    if (textInput) {
      textInput.addEventListener("input", function () { syncBoxesFromText(); saveDraft(); });
    }

    // 4. the keys
    document.addEventListener("keydown", onKey, true);
    document.addEventListener("focusin", function (event) {
      // focus never leaves the judging form by accident (a stray Tab, a click on the page)
      var target = event.target;
      if (form.contains(target) || (inHistory && history && history.contains(target)) || document.body.classList.contains("full-view")) { return; }
      inHistory = false;
      if (ready) { form.focus({ preventScroll: true }); }
    });
    var frames = document.getElementById("frames");
    if (frames) { frames.addEventListener("click", toggleFull); }

    function plainKey(event) { return !(event.altKey || event.metaKey || event.ctrlKey); }

    function onKey(event) {
      var key = event.key;
      var lower = key.toLowerCase();
      var target = event.target;
      if (!plainKey(event)) { return; }
      if (target === textInput) {
        if (key === "Enter" || key === "Escape") {   // leave the field; Enter here never saves
          event.preventDefault();
          syncBoxesFromText();
          form.focus({ preventScroll: true });
          record(KEY_NAMES[lower]);
        }
        return;
      }
      if (inHistory && history && history.contains(target)) {
        if (key === "Escape" || lower === "h") { event.preventDefault(); inHistory = false; form.focus({ preventScroll: true }); }
        else if (key === "Tab") { cycle(event, history.querySelectorAll("a")); }
        return;                                      // Enter follows the link
      }
      if (key === "Tab") { cycle(event, tabStops()); return; }
      if (target && target.id === "use-draft" && (key === "Enter" || key === " ")) { return; }   // the button
      if (!ready || busy) {                          // between Enter and the next task's full load
        if (key.length === 1 || key === "Enter") {
          event.preventDefault();
          record(key === "Enter" ? KEY_NAMES.enter : key.toUpperCase(), "ignored: loading");
        }
        return;
      }
      if (key === "Enter") { event.preventDefault(); record(KEY_NAMES.enter); save(); return; }
      if (key === "Escape") { if (document.body.classList.contains("full-view")) { toggleFull(); } return; }
      if (lower === "z") { event.preventDefault(); record("Z"); undo(); return; }
      if (lower === "f") { event.preventDefault(); record("F"); toggleFull(); return; }
      if (lower === "h") { event.preventDefault(); record("H"); enterHistory(); return; }
      if (lower === "r" && offered) { event.preventDefault(); record("R"); useOffered(); return; }
      if (lower === "a" && textInput) { event.preventDefault(); record("A"); textInput.focus(); textInput.select(); return; }
      var input = null;
      if (LETTERS[lower]) {
        input = radio(LETTERS[lower][0], LETTERS[lower][1]);
      } else if (/^[1-9]$/.test(key)) {                // digits: a reason, on every step (none on anchor steps)
        input = form.querySelector('input[name="reason"][data-key="' + key + '"]');
        if (!input) { event.preventDefault(); record(key, "digits choose a reason, on pairs only"); return; }
      }
      if (!input) { return; }
      event.preventDefault();
      record(key.toUpperCase());
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }

    function save() {
      if (!ready || busy) { return; }
      if (!form.checkValidity()) {
        form.reportValidity();
        setState("Answer every question first (the marked one).", "failed");
        return;
      }
      form.requestSubmit();
    }

    function undo() {
      if (busy || !undoForm || !undoButton || undoButton.disabled) { return; }
      busy = true;
      document.body.classList.add("is-busy");
      setState("Undoing ...", "busy");
      undoForm.requestSubmit();
    }

    function enterHistory() {
      var first = history && history.querySelector("a");
      if (!first) { return; }
      inHistory = true;
      first.focus();
    }

    function toggleFull() {
      var on = document.body.classList.toggle("full-view");
      Array.prototype.forEach.call(images, function (img) {
        var full = img.getAttribute("data-full");
        if (on && full && img.getAttribute("src") !== full) {
          img.setAttribute("data-page-src", img.getAttribute("src"));
          img.setAttribute("src", full);
        }
      });
      if (!on) { form.focus({ preventScroll: true }); }
    }

    function tabStops() {
      var seen = {};
      return Array.prototype.filter.call(form.querySelectorAll("input, button"), function (el) {
        if (el.type === "hidden" || el.disabled) { return false; }
        if (el.type !== "radio") { return true; }
        if (seen[el.name]) { return false; }
        var checked = form.querySelector('input[name="' + el.name + '"]:checked');
        if (checked && checked !== el) { return false; }
        seen[el.name] = true;
        return true;
      });
    }

    function cycle(event, list) {
      var items = Array.prototype.slice.call(list);
      if (!items.length) { return; }
      var at = items.indexOf(document.activeElement);
      if (document.activeElement && document.activeElement.type === "radio" && at < 0) {
        items.forEach(function (el, i) { if (el.name === document.activeElement.name) { at = i; } });
      }
      event.preventDefault();
      var next = event.shiftKey ? (at <= 0 ? items.length - 1 : at - 1) : (at < 0 || at === items.length - 1 ? 0 : at + 1);
      items[next].focus();
    }

    function radio(name, value) {
      return form.querySelector('input[name="' + name + '"][value="' + value + '"]');
    }

    function syncReason() {
      // a reason belongs to a dissimilar answer only, and a dissimilar answer needs one
      var dissimilar = radio("similarity", "dissimilar");
      var reasons = form.querySelectorAll('input[name="reason"]');
      if (!dissimilar || !reasons.length) { return; }
      Array.prototype.forEach.call(reasons, function (r) {
        r.required = dissimilar.checked;
        if (!dissimilar.checked) { r.checked = false; }
      });
    }

    function syncTextFromBoxes() {
      if (!textInput) { return; }
      textInput.value = Array.prototype.filter.call(boxes, function (b) { return b.checked && !b.disabled; })
        .map(function (b) { return b.value; }).join(", ");
    }

    function syncBoxesFromText() {
      if (!textInput || !boxes.length) { return; }
      var names = {};
      Array.prototype.forEach.call(boxes, function (b) {   // class names, then numbers (a number wins, as on the server)
        names[(b.getAttribute("data-name") || "").trim().toLowerCase()] = b.value;
      });
      Array.prototype.forEach.call(boxes, function (b) { names[b.value] = b.value; });
      var wanted = {};
      textInput.value.split(/[,;]/).forEach(function (part) {
        var v = part.trim().toLowerCase();
        if (v && names[v] !== undefined) { wanted[names[v]] = true; }
      });
      Array.prototype.forEach.call(boxes, function (b) { if (!b.disabled) { b.checked = !!wanted[b.value]; } });
    }

    function fields() {
      var out = {};
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.type === "hidden" || el.disabled) { return; }
        if ((el.type === "radio" || el.type === "checkbox") && !el.checked) { return; }
        (out[el.name] = out[el.name] || []).push(el.value);
      });
      return out;
    }

    // This task's draft: the choices shown, on the version in the form's base; a draft that was
    // being saved (pending) stays pending until the server confirms it.
    function saveDraft(pending) {
      var old = readDrafts()[id];
      var d = { user: user, round: round, task: task, what: form.getAttribute("data-what"), base: baseInput.value,
                fields: fields(), pending: pending === undefined ? !!(old && old.pending) : pending,
                after: "", why: "" };
      putDraft(d);
      return d;
    }

    function applyDraft(d, text) {
      Array.prototype.forEach.call(form.elements, function (el) {
        if (!el.name || el.type === "hidden" || el.disabled) { return; }
        var values = d.fields[el.name] || [];
        if (el.type === "radio" || el.type === "checkbox") { el.checked = values.indexOf(el.value) >= 0; }
        else if (el.type === "text") { el.value = values.length ? values[0] : ""; }
      });
      syncReason();
      baseInput.value = d.base;
      // a draft is never "saved": the notes about what the server shows go
      ["saved-note", "preset-note", "undone-note", "stale-undo-note"].forEach(function (noteId) {
        var el = document.getElementById(noteId);
        if (el) { el.hidden = true; }
      });
      note(text + " Your draft is filled in, not saved: Enter saves it.");
    }

    // Fill in a draft made on the version shown; offer one made on an older version (the task
    // was answered or undone since): the page keeps showing the task as it is now.
    function offer(d, text) {
      if (d.base === pageBase) { applyDraft(d, text); return; }
      offered = d;
      var p = note(text + " This task has changed since your draft was made (it was answered or undone, here or in " +
                   "another tab), so it is shown as it is now; your draft (" + describe(d.fields) + ") is not filled in. ");
      var button = document.createElement("button");
      button.type = "button";
      button.id = "use-draft";
      button.className = "secondary";
      button.textContent = "Use my draft (R)";
      button.addEventListener("click", useOffered);
      p.appendChild(button);
    }

    function useOffered() {
      if (!offered || busy) { return; }
      var d = offered;
      offered = null;
      d.base = pageBase;                 // chosen after seeing the task as it is now
      putDraft(d);
      var old = document.getElementById("restored-note");
      if (old) { old.remove(); }
      applyDraft(d, "Your draft replaces what is shown.");
      form.focus({ preventScroll: true });
    }

    function note(text) {
      var p = document.createElement("p");
      p.className = "note restored";
      p.id = "restored-note";
      p.textContent = text;
      var first = form.querySelector("fieldset");
      form.insertBefore(p, first);
      return p;
    }

    // Saving: the draft is pending until the server confirms; nothing is lost on the way.
    function send() {
      busy = true;
      var d = saveDraft(true);
      var data = new URLSearchParams(new FormData(form));
      data.set("browser", window.robustlabBrowserKey || "");
      document.body.classList.add("is-busy");
      setState("Saving ...", "busy");
      showMessage("", []);
      form.inert = true;
      fetch(form.action, { method: "POST", body: data, credentials: "same-origin",
                           headers: { Accept: "application/json", "X-Review-Browser": window.robustlabBrowserKey || "" } })
        .then(function (response) {
          return response.json().then(function (json) { return [response.status, json]; },
                                      function () { return [response.status, {}]; });
        })
        .then(function (result) { answered(result[0], result[1] || {}, d); },
              function () { notSaved("the network failed (the server could not be reached)"); });
    }

    function answered(status, json, d) {
      if (status === 200 && json.next) {
        dropDraft(id);
        location.assign(json.next);
      } else if (status === 401) {       // no session (ended, or not this browser's): log in, then it is saved
        d.after = "login";
        putDraft(d);
        location.assign(json.login || "/?expired=1&next=" + encodeURIComponent("/review?task=" + task));
      } else if (status === 403 && json.code === "csrf") {   // a logout or a new login elsewhere: this page is stale
        d.why = "session";
        putDraft(d);
        location.assign("/review?task=" + task);
      } else if (status >= 500) {
        notSaved("the server failed (HTTP " + status + ")");
      } else {                           // refused, and the server says why: the choices stay on the page
        d.pending = false;
        putDraft(d);
        unlock();
        setState("Not saved.", "failed");
        showMessage(json.error || "The server refused the answer (HTTP " + status + ").", json.links || []);
      }
    }

    function notSaved(reason) {
      unlock();
      setState("Not saved: " + reason + ". Your answer is kept in this tab: Enter tries again.", "failed");
    }

    function unlock() {
      busy = false;
      form.inert = false;
      document.body.classList.remove("is-busy");
      form.focus({ preventScroll: true });
    }

    function showMessage(text, links) {
      if (!messageLine) { return; }
      messageLine.textContent = text;
      links.forEach(function (link, i) {
        messageLine.appendChild(document.createTextNode(i ? " · " : " "));
        var a = document.createElement("a");
        a.href = link.href;
        a.textContent = link.text;
        messageLine.appendChild(a);
      });
      messageLine.hidden = !text;
    }

    // Drafts of other tasks: only saves that did not go through are kept (choices never sent are
    // forgotten when the annotator moves on, as a browser would).
    function forgetUnsent(keep) {
      var all = readDrafts();
      Object.keys(all).forEach(function (k) { if (k !== keep && !all[k].pending) { delete all[k]; } });
      writeDrafts(all);
    }

    // Every other save of this tab that did not go through, with a link to its task; one the
    // server has after all (the response was lost) is forgotten without a word.
    function showLost(current) {
      var all = readDrafts();
      Object.keys(all).forEach(function (k) {
        var d = all[k];
        if (k === current || !d.pending) { return; }
        if (d.user !== user) {
          lost("An answer given as " + d.user + " to " + d.what + " was not saved; log in as " + d.user +
               " in this tab to save it.", null, k);
        } else if (d.round !== round) {
          lost("Your answer to " + d.what + " in round " + d.round + " was not saved before that round closed.", null, k);
          dropDraft(k);
        } else {
          fetch("/api/saved?task=" + encodeURIComponent(d.task), { credentials: "same-origin", headers: { Accept: "application/json" } })
            .then(function (r) { return r.ok ? r.json() : null; })
            .then(function (saved) {
              if (saved && String(saved.round) === d.round && canonicalSaved(saved.answer) === canonicalFields(d.fields)) {
                dropDraft(k);
              } else {
                lost("Your answer to " + d.what + " (" + describe(d.fields) + ") was not saved: ", "/review?task=" + d.task, k);
              }
            }, function () {
              lost("Your answer to " + d.what + " (" + describe(d.fields) + ") may not be saved: ", "/review?task=" + d.task, k);
            });
        }
      });
    }

    function lost(text, href, k) {
      if (!lostBox) { return; }
      var p = document.createElement("p");
      p.className = "lost";
      p.appendChild(document.createTextNode(text));
      if (href) {
        var a = document.createElement("a");
        a.href = href;
        a.textContent = "open it (your answer is filled in there)";
        p.appendChild(a);
      }
      var forget = document.createElement("button");
      forget.type = "button";
      forget.className = "link";
      forget.tabIndex = -1;
      forget.textContent = " (discard it)";
      forget.addEventListener("click", function () { dropDraft(k); p.remove(); lostBox.hidden = !lostBox.children.length; });
      p.appendChild(forget);
      lostBox.appendChild(p);
      lostBox.hidden = false;
    }

    function watchRound() {
      var notice = document.getElementById("round-notice");
      function check() {
        fetch("/api/round", { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (r) { return r.ok ? r.json() : null; })
          .then(function (data) {
            if (!data || String(data.round) === round || !notice) { return; }
            notice.textContent = "";
            notice.appendChild(document.createTextNode(data.round === 2
              ? "Round 2 is open (" + data.round2_pairs + " pairs to review together); round 1 is closed. "
              : "Round 1 is open again. "));
            var link = document.createElement("a");
            link.href = "/review";
            link.textContent = "Go to round " + data.round;
            notice.appendChild(link);
            notice.hidden = false;
          })
          .catch(function () { /* offline for a moment: try again later */ });
      }
      setInterval(check, POLL_MS);
      document.addEventListener("visibilitychange", function () {
        if (document.visibilityState === "visible") { check(); }
      });
    }
  }
})();
