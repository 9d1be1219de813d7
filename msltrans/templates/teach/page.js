// msltrans teaching page: line linking across the three columns, layout hovers.
(function () {
  "use strict";
  var byKey = {};
  var all = document.querySelectorAll(".ln");
  all.forEach(function (el) {
    var k = el.getAttribute("data-key");
    if (k) { (byKey[k] = byKey[k] || []).push(el); }
  });
  var lit = [];
  var pinned = null;

  function clear() {
    lit.forEach(function (el) { el.classList.remove("hl", "hl-op", "pin"); });
    lit = [];
  }

  function scrollTo(el) {
    var box = el.closest(".code");
    if (!box) { return; }
    var top = el.offsetTop - box.clientHeight / 3;
    box.scrollTop = Math.max(0, top);
  }

  // Light every line with this source key; lines of the same op name more strongly.
  function show(key, op, origin, scroll) {
    clear();
    var els = byKey[key] || [];
    var first = {};
    els.forEach(function (el) {
      el.classList.add(op && el.getAttribute("data-op") === op ? "hl-op" : "hl");
      lit.push(el);
      var col = el.closest(".col");
      if (col && !first[col.id]) { first[col.id] = el; }
    });
    if (origin) { origin.classList.add("pin"); lit.push(origin); }
    if (scroll) {
      Object.keys(first).forEach(function (c) { if (!origin || origin.closest(".col").id !== c) { scrollTo(first[c]); } });
    }
    document.body.setAttribute("data-selected", key || "");
  }

  function restore() {
    if (pinned) { show(pinned.key, pinned.op, pinned.el, false); } else { clear(); }
  }

  all.forEach(function (el) {
    var key = el.getAttribute("data-key");
    if (!key) { return; }
    el.addEventListener("mouseenter", function () { if (!pinned) { show(key, el.getAttribute("data-op"), null, false); } });
    el.addEventListener("mouseleave", function () { if (!pinned) { clear(); } });
    el.addEventListener("click", function () {
      if (pinned && pinned.el === el) { pinned = null; clear(); history.replaceState(null, "", "#"); return; }
      pinned = { key: key, op: el.getAttribute("data-op"), el: el };
      show(key, pinned.op, el, true);
      history.replaceState(null, "", "#L" + key);
    });
  });

  function fromHash() {
    var h = decodeURIComponent(location.hash || "");
    if (h.indexOf("#L") !== 0) { return; }
    var key = h.slice(2);
    var src = document.getElementById("src-" + key) || (byKey[key] || [])[0];
    if (!src) { return; }
    pinned = { key: key, op: null, el: src };
    show(key, null, src, true);
    scrollTo(src);
  }
  document.querySelectorAll("[data-jump]").forEach(function (a) {
    a.addEventListener("click", function () { setTimeout(fromHash, 0); });
  });
  window.addEventListener("hashchange", fromHash);

  // ---- layouts: who holds the element under the pointer -------------------------------
  var tip = document.getElementById("tip");

  function ownership(d) {
    var bases = d.reg.concat(d.lane, d.warp);
    var n = 1 << bases.length, rank = d.shape.length;
    var numel = d.shape.reduce(function (a, b) { return a * b; }, 1);
    var holders = new Array(numel);
    var owner = new Int32Array(numel).fill(-1);
    var R = 1 << d.reg.length, L = 1 << d.lane.length;
    for (var g = 0; g < n; g++) {
      var c = new Array(rank).fill(0);
      for (var b = 0; b < bases.length; b++) {
        if ((g >> b) & 1) { for (var i = 0; i < rank; i++) { c[i] ^= bases[b][i]; } }
      }
      var flat = 0;
      for (var j = 0; j < rank; j++) { flat = flat * d.shape[j] + c[j]; }
      (holders[flat] = holders[flat] || []).push(g);
      var r = g % R, lane = Math.floor(g / R) % L, warp = Math.floor(g / (R * L));
      if ((r & d.free[0]) === 0 && (lane & d.free[1]) === 0 && (warp & d.free[2]) === 0) { owner[flat] = g; }
    }
    return { holders: holders, owner: owner, R: R, L: L };
  }

  function describe(d, own, flat) {
    var idx = [], rest = flat;
    for (var j = d.shape.length - 1; j >= 0; j--) { idx.unshift(rest % d.shape[j]); rest = Math.floor(rest / d.shape[j]); }
    var hs = own.holders[flat] || [];
    var name = function (g) {
      return "simdgroup " + Math.floor(g / (own.R * own.L)) + ", lane " + (Math.floor(g / own.R) % own.L) + ", register " + (g % own.R);
    };
    var lines = ["element (" + idx.join(", ") + ")"];
    if (own.owner[flat] >= 0) { lines.push("owner: " + name(own.owner[flat])); }
    var others = hs.filter(function (g) { return g !== own.owner[flat]; });
    if (others.length) {
      lines.push("copies also in: " + others.slice(0, 6).map(name).join("; ") + (others.length > 6 ? "; ... (" + others.length + " in all)" : ""));
    }
    return lines.join("\n");
  }

  document.querySelectorAll(".svgbox").forEach(function (box) {
    var d = JSON.parse(box.getAttribute("data-layout"));
    var own = ownership(d);
    // A digest of the owner table (the tests compare it with msltrans.layout's).
    var digest = 0;
    for (var e = 0; e < own.owner.length; e++) { digest = (digest + (e + 1) * (own.owner[e] + 1)) % 1000000007; }
    box.setAttribute("data-owner-digest", String(digest));
    box.addEventListener("mousemove", function (ev) {
      var rect = box.querySelector("svg").getBoundingClientRect();
      var fx = (ev.clientX - rect.left) / rect.width, fy = (ev.clientY - rect.top) / rect.height;
      var hit = null;
      d.panels.forEach(function (p) { if (fx >= p.x0 && fx < p.x1 && fy >= p.y0 && fy < p.y1) { hit = p; } });
      if (!hit) { tip.hidden = true; return; }
      var col = hit.col0 + Math.floor((fx - hit.x0) / (hit.x1 - hit.x0) * hit.cols);
      var row = hit.row0 + Math.floor((fy - hit.y0) / (hit.y1 - hit.y0) * hit.rows);
      tip.textContent = describe(d, own, row * d.cols + col);
      tip.hidden = false;
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 360) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    });
    box.addEventListener("mouseleave", function () { tip.hidden = true; });
  });

  fromHash();
  document.body.setAttribute("data-ready", "1");
})();
