'use strict';
(() => {
  const { vis, api } = SG;
  const cards = new Map(); // id -> {entry, node, done}
  const list = document.getElementById('cards');
  let selected = null;
  let es = null;

  const { stateLabel } = SG.card;

  function card(e) {
    const c = SG.card.build(e);
    const { node, reason } = c;
    node.addEventListener('click', (ev) => {
      const act = ev.target && ev.target.getAttribute && ev.target.getAttribute('data-act');
      select(c);
      if (act) decide(c, act);
    });
    reason.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); decide(c, 'deny'); }
      if (ev.key === 'Escape') reason.blur();
    });
    return c;
  }

  function finish(c, state, decision, note) {
    if (c.done) return;
    c.done = true;
    c.node.classList.remove('pending');
    c.node.classList.add('done', state);
    c.node.querySelector('.badge.state').textContent = stateLabel(state);
    c.countdown.textContent = '';
    for (const b of c.node.querySelectorAll('button, input')) b.disabled = true;
    let text = note || '';
    if (!text && decision) {
      text = stateLabel(state) + ' by ' + SG.decisionText(decision) + (decision.reason ? ' — ' + decision.reason : '');
      const stored = SG.storedText(decision, c.entry.action);
      if (stored) text += ' — ' + stored;
    }
    c.status.textContent = '';
    c.status.appendChild(vis(text));
    if (selected === c) {
      const next = [...list.children].map((n) => cards.get(n.getAttribute('data-id'))).find((o) => o && !o.done);
      select(next || null);
    }
    setTimeout(() => { c.node.remove(); cards.delete(c.entry.id); refreshCount(); }, 60000);
    refreshCount();
  }

  async function decide(c, kind) {
    if (c.done) return;
    const body = { decision: kind, hash: c.entry.requestHash };
    if (kind === 'deny' && c.reason.value.trim()) body.reason = c.reason.value.trim();
    c.status.textContent = 'Sending…';
    const r = await api('POST', '/api/requests/' + encodeURIComponent(c.entry.id) + '/decision', body);
    if (r.ok) {
      finish(c, r.data.state, r.data.decision);
    } else if (r.status === 409) {
      finish(c, 'stale', null, r.data.message || 'This request changed or was already answered; your decision was not applied.');
      c.node.querySelector('.badge.state').textContent = 'NOT APPLIED';
    } else {
      c.status.textContent = r.data.message || ('Error ' + r.status);
    }
  }

  function add(e) {
    if (cards.has(e.id)) return;
    const c = card(e);
    cards.set(e.id, c);
    // Oldest deadline first.
    const after = [...list.children].find((n) => {
      const o = cards.get(n.getAttribute('data-id'));
      return o && !o.done && o.entry.deadlineMs > e.deadlineMs;
    });
    list.insertBefore(c.node, after || null);
    tick();
    refreshCount();
    notify(e);
    if (!selected) select(c);
  }

  function select(c) {
    if (selected) selected.node.classList.remove('selected');
    selected = c;
    if (c) { c.node.classList.add('selected'); }
    // The legend names Allow always only where the selected request offers it.
    document.getElementById('key-always').hidden = !(c && (c.entry.offered || []).includes('allow-always'));
  }

  // Pending requests the last load counted but did not fetch (beyond the shown pages): the
  // badge and title count them too, so 10,000 pending never reads as 500.
  let beyond = 0;
  function refreshCount() {
    const n = [...cards.values()].filter((c) => !c.done).length + beyond;
    document.getElementById('pending-count').textContent = String(n);
    document.getElementById('empty').hidden = cards.size > 0;
    document.title = (n ? '(' + n + ') ' : '') + 'Inbox · sanctum-guard';
  }

  function tick() {
    const now = SG.now();
    for (const c of cards.values()) {
      if (c.done) continue;
      const left = Math.ceil((c.entry.deadlineMs - now) / 1000);
      if (left > 0) {
        c.countdown.textContent = left + ' s left';
        c.node.classList.toggle('urgent', left <= 5);
      } else {
        c.countdown.textContent = 'deadline passed';
      }
    }
  }

  function notify(e) {
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    try { new Notification('sanctum-guard: approval needed', { body: SG.visText(e.summary), tag: e.id }); } catch (_) { /* ignore */ }
  }

  // Pending requests are read a page at a time (oldest deadline first); `total` says how many
  // there are, so the page never takes the first page for all of them.
  const PAGE = 500;
  let shown = PAGE;
  async function load() {
    const r = await api('GET', '/api/requests?state=pending&limit=' + shown);
    if (!r.ok) return;
    SG.setServerNow(r.data.nowMs);
    const complete = r.data.total <= r.data.requests.length;
    // Only a complete list proves that a card missing from it is no longer pending.
    if (complete) {
      const live = new Set(r.data.requests.map((e) => e.id));
      for (const c of cards.values()) {
        if (!c.done && !live.has(c.entry.id)) finish(c, 'resolved-elsewhere', null, 'No longer pending (answered elsewhere or expired).');
      }
    }
    r.data.requests.forEach(add);
    beyond = Math.max(0, r.data.total - r.data.requests.length);
    const more = document.getElementById('more');
    more.hidden = complete;
    document.getElementById('more-text').textContent = complete ? '' :
      'Showing ' + r.data.requests.length + ' of ' + r.data.total + ' pending requests (oldest deadlines first).';
    refreshCount();
    openLinked();
  }
  document.getElementById('more-btn').addEventListener('click', () => { shown += PAGE; load(); });

  // A `#r=ID` link (the guard's log line names one per waiting request) opens that card:
  // selected, scrolled into view and focused.
  function openLinked() {
    const m = /^#r=([A-Za-z0-9_-]+)$/.exec(location.hash);
    const c = m && cards.get(m[1]);
    if (!c) return;
    select(c);
    c.node.scrollIntoView({ block: 'center' });
    c.node.focus();
  }
  window.addEventListener('hashchange', openLinked);

  // Search: cards whose text does not contain the words are hidden (never decided).
  const search = document.getElementById('search');
  function applySearch() {
    const q = search.value.trim().toLowerCase();
    for (const c of cards.values()) {
      c.node.hidden = !!q && !c.node.textContent.toLowerCase().includes(q);
    }
  }
  search.addEventListener('input', applySearch);
  // Compact view: the command and its buttons only; remembered in this browser.
  const compact = document.getElementById('compact');
  function setCompact(on) {
    list.classList.toggle('compact', on);
    compact.setAttribute('aria-pressed', on ? 'true' : 'false');
    try { localStorage.setItem('sg-compact', on ? '1' : ''); } catch (_) { /* private mode */ }
  }
  compact.addEventListener('click', () => setCompact(!list.classList.contains('compact')));
  try { setCompact(localStorage.getItem('sg-compact') === '1'); } catch (_) { /* ignore */ }
  // Bulk deny: the ticked, still pending, visible cards, after one confirmation.
  document.getElementById('bulk-deny').addEventListener('click', async () => {
    const chosen = [...cards.values()].filter((c) => !c.done && c.pick.checked && !c.node.hidden);
    if (!chosen.length) { SG.banner('Tick the requests to deny first.'); return; }
    if (!window.confirm('Deny ' + chosen.length + ' selected request' + (chosen.length > 1 ? 's' : '') + '?')) return;
    for (const c of chosen) await decide(c, 'deny');
  });

  // The stream failed. EventSource retries by itself only while the server is unreachable;
  // a refusal (a session the guard no longer knows after a restart or logout, or every
  // stream slot taken) closes it for good. Ask the session: gone → "Not signed in";
  // otherwise reconnect in a few seconds.
  let checking = false;
  async function lost() {
    if (checking) return;
    checking = true;
    try {
      const r = await fetch('/api/session', { credentials: 'same-origin' });
      if (r.status === 401) { if (es) es.close(); SG.signedOut(); return; }
      if (es && es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    } catch (_) {
      if (es && es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    } finally {
      checking = false;
    }
  }

  function connect() {
    if (es) es.close();
    es = new EventSource('/api/events');
    const liveEl = document.getElementById('live');
    es.onopen = () => { liveEl.textContent = '● live'; liveEl.className = 'live on'; load(); };
    es.onerror = () => { liveEl.textContent = '○ reconnecting…'; liveEl.className = 'live off'; lost(); };
    es.addEventListener('added', (m) => add(JSON.parse(m.data)));
    const done = (m) => {
      const d = JSON.parse(m.data);
      const c = cards.get(d.id);
      if (!c) return;
      const note = d.state === 'expired' ?
        'EXPIRED — nobody decided in time; the agent was told ' + ((d.decision && d.decision.reason) || 'approval-timeout') + '.' : null;
      finish(c, d.state, d.decision, note);
    };
    es.addEventListener('resolved', done);
    es.addEventListener('expired', done);
    es.addEventListener('resync', load);
    es.addEventListener('signed-out', () => { es.close(); SG.signedOut(); });
  }

  function move(dir) {
    const open = [...list.children].map((n) => cards.get(n.getAttribute('data-id'))).filter((c) => c && !c.done);
    if (!open.length) return;
    const i = Math.max(0, open.indexOf(selected));
    const next = open[Math.min(open.length - 1, Math.max(0, i + dir))];
    select(next);
    next.node.focus();
  }

  document.addEventListener('keydown', (ev) => {
    if (ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'TEXTAREA') ) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const c = selected && !selected.done ? selected : null;
    switch (ev.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'a': if (c) decide(c, 'allow-once'); break;
      case 'A':
        // A stored grant outlives this request: one key press never makes one unasked.
        if (c && c.entry.offered.includes('allow-always') &&
            window.confirm('Allow always: store a grant for this exact command?')) decide(c, 'allow-always');
        break;
      case 'd': if (c) { ev.preventDefault(); c.reason.focus(); } break;
      case 'D': if (c) decide(c, 'deny'); break;
      default: return;
    }
  });

  document.getElementById('notify').addEventListener('click', async () => {
    if (!('Notification' in window)) { SG.banner('This browser cannot show notifications.'); return; }
    const p = await Notification.requestPermission();
    document.getElementById('notify').textContent = p === 'granted' ? 'Notifications on' : 'Notifications blocked';
  });

  (async () => {
    if (!(await SG.session())) return;
    document.getElementById('inbox').hidden = false;
    connect();
    setInterval(tick, 250);
  })();
})();
