'use strict';
// When a key may act on the inbox's open card. A person approves only what they saw: a key
// acts on the card they opened, while it has the focus, while its command is on screen, once
// it has stayed unchanged for STEADY_MS (built, expanded, re-rendered or scrolled back into
// view all count as a change), and only through the card's own button, which the card
// disables while part of what runs is not shown yet. A key pressed again within KEY_GAP_MS is
// ignored, so a burst of presses never reaches a card that appears under it.
SG.gate = (() => {
  const STEADY_MS = 500;
  const KEY_GAP_MS = 300;
  const watched = new Map(); // card -> {changedAt, onScreen, mo, io}

  // Parts of a card that change by themselves (the countdown, the status line, anything
  // marked data-live) are not a change of what the request is.
  function quiet(c, m) {
    const n = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    if (!n) return true;
    if (c.countdown.contains(n) || c.status.contains(n) || n.closest('[data-live]')) return true;
    // The inbox's own marks on the card (selected, in flight).
    return n === c.node && m.type === 'attributes' && m.attributeName === 'class';
  }

  function watch(c) {
    const st = { changedAt: performance.now(), onScreen: false };
    st.mo = new MutationObserver((list) => {
      if (list.some((m) => !quiet(c, m))) st.changedAt = performance.now();
    });
    st.mo.observe(c.node, { subtree: true, childList: true, characterData: true, attributes: true });
    st.io = new IntersectionObserver((list) => {
      for (const en of list) {
        if (en.isIntersecting !== st.onScreen) st.changedAt = performance.now();
        st.onScreen = en.isIntersecting;
      }
    });
    st.io.observe(c.node.querySelector('.what') || c.node);
    watched.set(c, st);
  }

  function unwatch(c) {
    const st = watched.get(c);
    if (!st) return;
    st.mo.disconnect();
    st.io.disconnect();
    watched.delete(c);
  }

  function visible(r, box) {
    return r.height > 0 && r.bottom > Math.max(0, box.top) && r.top < Math.min(window.innerHeight, box.bottom);
  }

  // Why `act` may not be done on `rec` by a key now, or null when it may.
  function refuse(rec, act) {
    if (!rec || !rec.card) return 'Open a request first (click it): keys act only on the open card.';
    if (rec.done) return 'This request is decided; open another one.';
    if (rec.inflight) return 'A decision for this request is on its way.';
    const node = rec.card.node;
    const st = watched.get(rec.card);
    if (!st || !node.isConnected || node.offsetParent === null) return 'The card is not shown.';
    if (!node.contains(document.activeElement)) return 'Keys act on the open card while it has the focus: click it.';
    const pane = node.closest('.detail') || document.documentElement;
    const box = pane.getBoundingClientRect();
    const what = (node.querySelector('.what') || node).getBoundingClientRect();
    if (!st.onScreen || !visible(what, box)) return 'Scroll the card\u2019s command into view first.';
    if (performance.now() - st.changedAt < STEADY_MS) return 'The card just changed: read it, then press again.';
    const b = node.querySelector('button[data-act="' + act + '"]');
    if (!b || b.offsetParent === null) return 'This card offers no ' + act + ' here.';
    if (b.disabled) return 'Not enabled yet: the card says what to read first.';
    return null;
  }

  // The keys: j/k open the next/previous request (an explicit choice), a/A/D decide and d
  // types a deny reason, each only when `refuse` finds nothing.
  function keys(o) {
    const note = document.getElementById('key-note');
    let noteTimer = 0;
    const say = (t) => {
      note.textContent = t;
      clearTimeout(noteTimer);
      noteTimer = setTimeout(() => { note.textContent = ''; }, 4000);
    };
    let lastKey = -Infinity;
    const acts = { a: 'allow-once', A: 'allow-always', D: 'deny', d: 'deny' };
    document.addEventListener('keydown', (ev) => {
      const t = ev.target;
      if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable)) return;
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (!'jkaAdD'.includes(ev.key) || ev.key.length !== 1) return;
      ev.preventDefault();
      const now = performance.now();
      const soon = ev.repeat || now - lastKey < KEY_GAP_MS;
      lastKey = now;
      if (soon) { say('Key ignored: pressed again within ' + KEY_GAP_MS + ' ms.'); return; }
      if (ev.key === 'j' || ev.key === 'k') { o.move(ev.key === 'j' ? 1 : -1); return; }
      const rec = o.current();
      const act = acts[ev.key];
      const why = refuse(rec, act);
      if (why) { say(why); return; }
      if (ev.key === 'd') { rec.card.reason.focus(); return; }
      if (act === 'allow-always' && !confirmAlways(rec, o)) return;
      // The dialog took time: the card may have changed meanwhile.
      const again = refuse(rec, act);
      if (again) { say(again); return; }
      say('');
      o.decide(rec, act);
    });
  }

  // A stored grant outlives this request: the confirmation names the command, where it runs
  // and what the card says will be stored.
  function confirmAlways(rec, o) {
    const a = rec.entry.action || {};
    const stores = rec.card.node.querySelector('[data-field=stores]') ||
      rec.card.node.querySelector('[data-field=egress-rule]');
    const text = 'Allow always: store a grant, so later runs need nobody.\n\nCommand: ' +
      SG.visText(o.commandText(rec.entry)).slice(0, 600) +
      (a.cwd ? '\nin: ' + SG.visText(a.cwd) : '') +
      (stores ? '\n\nIt stores: ' + SG.visText(stores.textContent).slice(0, 600) : '');
    return window.confirm(text);
  }

  return { watch, unwatch, keys, refuse, STEADY_MS, KEY_GAP_MS };
})();
