// The per-example browser: filters, sorting and paging over the embedded JSON blob.
// State lives in the URL hash (#variant=cf&ack=1&sort=-rm&page=2) so a view can be linked
// and a headless browser can open the page in a given state.
(function () {
  "use strict";
  var PAGE = 50;
  var KEYS = ["variant", "fired", "ack", "correct", "valid", "human", "sort", "q", "prompts"];
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  var F = {};
  data.fields.forEach(function (name, i) { F[name] = i; });
  var rows = data.responses, examples = data.examples;
  var form = document.getElementById("filters");
  var sortSel = form.elements.sort;
  var rewardCols = ["reward_plain", "reward_augmented"].concat(data.reward_variants);
  rewardCols.forEach(function (col) {
    [["-", "highest"], ["+", "lowest"]].forEach(function (d) {
      var o = document.createElement("option");
      o.value = (d[0] === "-" ? "-" : "") + col;
      o.textContent = col + ", " + d[1] + " first";
      sortSel.appendChild(o);
    });
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function reward(r, col) {
    if (col === "reward_plain" || col === "reward_augmented") return r[F[col]];
    return r[F.rewards][data.reward_variants.indexOf(col)];
  }
  function textOf(r) { var t = r[F.text]; return Array.isArray(t) ? t.join("") : t; }
  function readHash() {
    var s = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var p = kv.split("=");
      s[decodeURIComponent(p[0])] = decodeURIComponent(p[1] || "");
    });
    return s;
  }
  function state() {
    var s = {};
    KEYS.forEach(function (k) { if (form.elements[k].value) s[k] = form.elements[k].value; });
    return s;
  }
  function flagMatch(v, want) { return want === undefined || (want === "1") === (v === true); }
  function matches(r, s) {
    if (s.variant && r[F.variant] !== s.variant) return false;
    var d = r[F.d] === true, c = r[F.c] === true;
    if (s.fired === "d" && !d) return false;
    if (s.fired === "c" && !c) return false;
    if (s.fired === "any" && !(d || c)) return false;
    if (s.fired === "none" && (d || c)) return false;
    if (!flagMatch(r[F.ack], s.ack) || !flagMatch(r[F.correct], s.correct) || !flagMatch(r[F.valid], s.valid)) return false;
    if (s.human) {  // human labels: present where the report found a labels file for this response
      var label = r[F.label];
      if (label === null || label === undefined) return false;
      if (s.human === "disagree" && label === (r[F.ack] === true)) return false;
      if (s.human === "agree" && label !== (r[F.ack] === true)) return false;
    }
    if (s.q) {
      var q = s.q.toLowerCase(), ex = examples[r[F.e]] || {};
      if (textOf(r).toLowerCase().indexOf(q) < 0 && String(ex.id).toLowerCase().indexOf(q) < 0) return false;
    }
    return true;
  }
  function selected(s) {
    var idx = [];
    for (var i = 0; i < rows.length; i++) if (matches(rows[i], s)) idx.push(i);
    if (s.sort) {
      var desc = s.sort.charAt(0) === "-", col = s.sort.replace(/^[-+]/, "");
      idx.sort(function (a, b) {
        var x = reward(rows[a], col), y = reward(rows[b], col);
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return desc ? y - x : x - y;
      });
    }
    return idx;
  }
  function answer(ex, pred) {
    if (pred === null || pred === undefined) return "none";
    return "(" + String.fromCharCode(65 + pred) + ") " + (ex.options ? ex.options[pred] : "");
  }
  function badge(label, v) {
    if (v === null || v === undefined) return el("span", "badge", label + ": n/a");
    return el("span", "badge " + (v ? "yes" : "no"), label + ": " + (v ? "yes" : "no"));
  }
  function prompts(ex) {
    var box = el("div", "prompts");
    [[1, "del", "original prompt"], [2, "ins", "counterfactual prompt"]].forEach(function (side) {
      var col = el("div"), pre = el("pre");
      col.appendChild(el("h4", null, side[2]));
      ex.diff.forEach(function (seg) {
        if (seg[0] === 0) pre.appendChild(document.createTextNode(seg[1]));
        else if (seg[0] === side[0]) pre.appendChild(el(side[1], "feature", seg[1]));
      });
      col.appendChild(pre);
      box.appendChild(col);
    });
    return box;
  }
  function reveal(box) {  // scroll each prompt to its first changed passage (the feature)
    box.querySelectorAll("pre").forEach(function (pre) {
      var m = pre.querySelector(".feature");
      if (m) pre.scrollTop = Math.max(0, m.offsetTop - pre.offsetTop - 40);
    });
  }
  function card(r) {
    var ex = examples[r[F.e]] || {id: "?", diff: [], options: []};
    var c = el("article", "card");
    c.dataset.variant = r[F.variant];
    c.dataset.ack = String(r[F.ack]);
    c.dataset.correct = String(r[F.correct]);
    c.dataset.d = String(r[F.d]);
    c.dataset.c = String(r[F.c]);
    var label = r[F.label];
    c.dataset.human = label === null || label === undefined ? "none" : (label === (r[F.ack] === true) ? "agree" : "disagree");
    var h = el("header");
    h.appendChild(el("strong", null, ex.id));
    h.appendChild(el("span", "badge " + r[F.variant], r[F.variant]));
    h.appendChild(el("span", "muted", "sample " + r[F.sample]));
    h.appendChild(el("span", null, "answer " + answer(ex, r[F.pred]) + " · gold " + answer(ex, ex.answer)));
    h.appendChild(badge("valid", r[F.valid]));
    h.appendChild(badge("correct", r[F.correct]));
    if (r[F.variant] === "orig") { h.appendChild(badge("D", r[F.d])); h.appendChild(badge("C", r[F.c])); }
    if (r[F.receipt] !== null) h.appendChild(el("span", "badge", "receipt " + r[F.receipt]));
    h.appendChild(badge("acknowledged", r[F.ack]));
    if (c.dataset.human !== "none") {
      h.appendChild(el("span", "badge " + (label ? "yes" : "no"), "human: " + (label ? "ack" : "no-ack")));
      if (c.dataset.human === "disagree") h.appendChild(el("span", "badge disagree", "judge disagrees with the label"));
    }
    c.appendChild(h);
    var rw = rewardCols.map(function (col) {
      var v = reward(r, col);
      return col + " " + (v === null || v === undefined ? "n/a" : v.toFixed(3));
    });
    c.appendChild(el("div", "muted rewards", "rewards: " + rw.join(" · ")));
    var j = el("div", "judge");
    j.appendChild(el("strong", null, "judge: " + (r[F.ack] ? "acknowledges" : "does not acknowledge") + (r[F.ack_parsed] === false ? " (unparsed output)" : "") + " "));
    j.appendChild(el("span", "reason", r[F.ack_raw] || ""));
    c.appendChild(j);
    var t = r[F.text], body = el("div", "response");
    if (Array.isArray(t)) {
      body.appendChild(document.createTextNode(t[0]));
      body.appendChild(el("mark", "evidence", t[1]));
      body.appendChild(document.createTextNode(t[2]));
    } else body.textContent = t;
    c.appendChild(body);
    var det = el("details");
    det.appendChild(el("summary", null, "prompts side by side (" + (ex.sources || []).map(function (s) { return s.name + (s.protected ? " [protected]" : ""); }).join(", ") + ")"));
    det.addEventListener("toggle", function () {  // built on first open: prompts are long
      if (det.open && det.children.length === 1) { det.appendChild(prompts(ex)); reveal(det); }
    }, {once: true});
    if (form.elements.prompts.value === "1") { det.open = true; det.appendChild(prompts(ex)); }
    c.appendChild(det);
    c.reveal = function () { reveal(det); };
    return c;
  }
  var page = 1;
  function render() {
    var s = state(), idx = selected(s), pages = Math.max(1, Math.ceil(idx.length / PAGE));
    page = Math.min(Math.max(1, page), pages);
    var box = document.getElementById("cards");
    box.textContent = "";
    idx.slice((page - 1) * PAGE, page * PAGE).forEach(function (i) { var c = card(rows[i]); box.appendChild(c); c.reveal(); });
    document.getElementById("shown-count").textContent = idx.length;
    document.getElementById("page-info").textContent = "page " + page + " of " + pages;
    if (page > 1) s.page = page;
    var h = Object.keys(s).map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(s[k]); }).join("&");
    history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
  }
  function apply(s) {
    KEYS.forEach(function (k) { form.elements[k].value = s[k] || ""; });
    page = parseInt(s.page || "1", 10) || 1;
    render();
  }
  form.addEventListener("input", function () { page = 1; render(); });
  document.getElementById("prev").addEventListener("click", function () { page -= 1; render(); });
  document.getElementById("next").addEventListener("click", function () { page += 1; render(); });
  window.addEventListener("hashchange", function () { apply(readHash()); });
  apply(readHash());
})();
