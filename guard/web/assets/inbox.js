'use strict';
// The inbox: a dense queue of pending requests (one line each, kept as data; only the rows
// near the viewport exist in the page, recycled as it scrolls) and one open card, the request
// the reviewer chose. A reviewer approves only what they saw, so nothing is ever chosen for
// them: an arrival is never opened, a decision never moves on to the next request, and a key
// acts only on the open card while it is on screen, focused, and has stayed unchanged for a
// moment (SG.gate, inbox-gate.js); every Allow goes through the card's own button, which the
// card keeps disabled while part of what runs is not yet shown.
(() => {
  const { vis, api } = SG;
  const { stateLabel } = SG.card;
  /** Entries read per page (the API's `limit`); the rest are reached by paging or search. */
  const PAGE = 1000;
  /** How long a decided request stays in the queue with its outcome. */
  const DONE_KEEP_MS = 60000;

  const queue = document.getElementById('queue');
  const cardsBox = document.getElementById('cards');
  const inboxEl = document.getElementById('inbox');
  let items = [];            // records in queue order: {entry, done, state, note, ver}
  const byId = new Map();    // id -> record (every record in `items`, and the open one)
  let open = null;           // the record whose card is open (the reviewer chose it)
  let es = null;
  let offset = 0;
  let total = 0;             // matches of the last load (the page's query)
  let pending = 0;           // every pending request, for the badge and title
  let query = '';
  // One agent's requests only (a fleet's inbox lists every guard's agents); '' = all.
  let agent = '';
  const picks = new Set();   // ids ticked for bulk deny

  function record(e) {
    const r = byId.get(e.id);
    if (r) return r;
    // `born`: how many list loads were sent before this record was known (see `load`).
    const rec = { entry: e, done: false, state: 'pending', note: '', ver: 0, card: null, inflight: false, born: loadSeq };
    byId.set(e.id, rec);
    return rec;
  }

  // ---- the open card -------------------------------------------------------------------
  function openRec(rec, opts) {
    if (open !== rec) {
      if (open) closeCard();
      open = rec;
      if (rec) {
        const c = SG.card.build(rec.entry);
        rec.card = c;
        if (rec.done) paintDone(rec);
        c.pick.checked = picks.has(rec.entry.id);
        c.pick.addEventListener('change', () => tickPick(rec, c.pick.checked));
        c.node.addEventListener('click', (ev) => {
          const b = ev.target && ev.target.closest && ev.target.closest('button[data-act]');
          // A disabled button gets no click; checked again here, on the button itself.
          if (b && !b.disabled && c.node.contains(b)) decide(rec, b.getAttribute('data-act'), b.getAttribute('data-grant'));
        });
        c.reason.addEventListener('keydown', (ev) => {
          if (ev.key === 'Enter') { ev.preventDefault(); decide(rec, 'deny'); }
          if (ev.key === 'Escape') c.reason.blur();
        });
        keepCwdInCompact(c.node);
        cardsBox.replaceChildren(c.node);
        SG.gate.watch(c);
      }
    }
    document.getElementById('detail-hint').hidden = !!rec;
    paintSelected();
    render();
    if (rec && opts && opts.focus) {
      rec.card.node.focus({ preventScroll: true });
      // On a narrow screen the card sits above the queue: bring its top into view if needed.
      const top = rec.card.node.getBoundingClientRect().top;
      if (window.matchMedia('(max-width: 899px)').matches && (top < 0 || top > window.innerHeight / 2)) {
        rec.card.node.scrollIntoView({ block: 'start' });
      }
    }
  }

  function closeCard() {
    if (!open) return;
    if (open.card) SG.gate.unwatch(open.card);
    open.card = null;
    open = null;
    cardsBox.replaceChildren();
    document.getElementById('detail-hint').hidden = false;
    paintSelected();
  }

  // `.selected` marks the open card while it can still be decided; a decided card stays
  // open with its outcome, selected for nothing.
  function paintSelected() {
    const c = open && open.card;
    if (c) c.node.classList.toggle('selected', !open.done);
    const always = !!(open && !open.done && (open.entry.offered || []).includes('allow-always'));
    document.getElementById('key-always').hidden = !always || inboxEl.classList.contains('compact');
  }

  // Compact view keeps the command and where it runs: the card's cwd field is marked so the
  // compact rules in app.css leave it shown.
  function keepCwdInCompact(node) {
    for (const dt of node.querySelectorAll('dt')) {
      if (dt.textContent === 'cwd' && dt.nextElementSibling) {
        dt.setAttribute('data-compact-keep', '');
        dt.nextElementSibling.setAttribute('data-compact-keep', '');
      }
    }
  }

  // ---- the queue (virtualised: inbox-queue.js) --------------------------------------------
  const rows = SG.queue(queue, {
    items: () => items,
    isOpen: (rec) => rec === open,
    picked: (rec) => picks.has(rec.entry.id),
    commandText,
    open: (rec) => openRec(rec, { focus: true }),
    pick: (rec, on) => tickPick(rec, on),
    lookup: (id) => byId.get(id),
  });
  const render = rows.render;

  // One line of what runs: the shell text, else the argv, else the summary.
  function commandText(e) {
    const a = e.action || {};
    if (a.kind === 'exec') return a.command || (a.argv || []).join(' ') || e.summary;
    return e.summary;
  }

  function tickPick(rec, on) {
    if (on && !rec.done) picks.add(rec.entry.id); else picks.delete(rec.entry.id);
    if (open === rec && rec.card) rec.card.pick.checked = picks.has(rec.entry.id);
    rec.ver++;
    render();
  }

  function refreshCount() {
    const n = Math.max(0, pending);
    document.getElementById('pending-count').textContent = String(n);
    document.title = (n ? '(' + n + ') ' : '') + 'Inbox · sanctum-guard';
  }

  // Oldest deadline first, as the API orders them.
  function insertSorted(rec) {
    const d = rec.entry.deadlineMs;
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid].entry.deadlineMs <= d) lo = mid + 1; else hi = mid;
    }
    items.splice(lo, 0, rec);
  }

  function matches(e) {
    if (agent && e.agentId !== agent) return false;
    if (!query) return true;
    const q = query.toLowerCase();
    return String(e.summary || '').toLowerCase().includes(q) || e.id.includes(q);
  }

  // ---- decisions --------------------------------------------------------------------------
  function paintDone(rec) {
    const c = rec.card;
    if (!c) return;
    c.node.classList.remove('pending', 'selected', 'inflight');
    c.node.classList.add('done', rec.state);
    c.node.querySelector('.badge.state').textContent = stateLabel(rec.state);
    c.countdown.textContent = '';
    for (const b of c.node.querySelectorAll('button, input')) b.disabled = true;
    c.status.replaceChildren(vis(rec.note));
  }

  // What the guard recorded, in words: its state, who decided and what was stored.
  function outcome(state, decision, note) {
    let text = note || '';
    if (!text && decision) {
      text = stateLabel(state) + ' by ' + SG.decisionText(decision) + (decision.reason ? ' — ' + decision.reason : '');
    }
    return text || stateLabel(state);
  }

  // `rec` is decided (by anyone) or gone: one fewer pending.
  function finish(rec, state, decision, note) {
    if (rec.done) return;
    pending--;
    total = Math.max(0, total - 1);
    markDone(rec, state, decision, note);
  }

  function markDone(rec, state, decision, note) {
    rec.done = true;
    rec.state = state;
    rec.note = outcome(state, decision, note);
    const stored = SG.storedText(decision, rec.entry);
    if (stored) rec.note += ' — ' + stored;
    rec.ver++;
    picks.delete(rec.entry.id);
    paintDone(rec);
    paintSelected();
    setTimeout(() => drop(rec), DONE_KEEP_MS);
    refreshCount();
    pager();
    render();
  }

  function drop(rec) {
    const i = items.indexOf(rec);
    if (i >= 0) items.splice(i, 1);
    if (open === rec) closeCard();
    byId.delete(rec.entry.id);
    render();
  }

  // One decision at a time per request: every button of the card is disabled from the
  // click to the guard's answer, and the card then shows what the guard recorded (from the
  // answer, or from the event stream if that came first), never a contradicting word.
  async function decide(rec, kind, grant) {
    if (!rec || rec.done || rec.inflight) return;
    const c = rec.card;
    const btns = c ? [...c.node.querySelectorAll('button[data-act]')] : [];
    const was = btns.map((b) => b.disabled);
    rec.inflight = true;
    btns.forEach((b) => { b.disabled = true; });
    if (c) { c.node.classList.add('inflight'); c.status.textContent = 'Sending…'; }
    const body = { decision: kind, hash: rec.entry.requestHash };
    if (kind === 'deny' && c && c.reason.value.trim()) body.reason = c.reason.value.trim();
    // "Allow + grant" is an allow-once carrying the grant the card showed.
    if (kind === 'allow-grant') { body.decision = 'allow-once'; body.grant = JSON.parse(grant || '{}'); }
    let r;
    try {
      r = await api('POST', '/api/requests/' + encodeURIComponent(rec.entry.id) + '/decision', body);
      if (r.status === 403 && r.data.error === 'passkey-required' && window.SGPasskey) {
        if (c) c.status.textContent = 'Confirm with your passkey…';
        body.passkey = await SGPasskey.forDecision(rec.entry.id, kind);
        r = await api('POST', '/api/requests/' + encodeURIComponent(rec.entry.id) + '/decision', body);
      }
      if (rec.done) return;
      // Recorded as one of several approvals: the request still waits for another reviewer.
      if (r.status === 202) { approved(r.data); if (c) { c.node.classList.remove('inflight'); c.status.textContent = r.data.message; c.buttons.deny.disabled = false; } return; }
      if (r.ok) { finish(rec, r.data.state, r.data.decision, r.data.grant && grantNote(r.data)); return; }
      if (r.status === 409 || r.status === 404) { await recorded(rec); return; }
    } catch (_) {
      r = { ok: false, status: 0, data: {} };
    } finally {
      rec.inflight = false;
    }
    if (rec.done) return;
    btns.forEach((b, i) => { b.disabled = was[i]; });
    if (c) { c.node.classList.remove('inflight'); c.status.textContent = r.data.message || ('Error ' + r.status + ': nothing was decided.'); }
  }

  // The outcome of an allow-once that also made a bounded grant: what the grant covers.
  function grantNote(d) {
    const g = d.grant;
    const made = g.error || ('granted ' + g.id + ': ' + (g.patterns || []).join(' ; ') + ' · ' + g.where);
    return outcome(d.state, d.decision, '') + ' — ' + made;
  }

  // The decision was refused (answered elsewhere, expired, or the request changed): ask the
  // guard what it recorded and show that.
  async function recorded(rec) {
    const g = await api('GET', '/api/requests/' + encodeURIComponent(rec.entry.id));
    if (rec.done) return;
    const why = 'your decision was not applied (already answered, expired or changed)';
    if (g.ok && g.data.state && g.data.state !== 'pending') {
      finish(rec, g.data.state, null, outcome(g.data.state, g.data.decision, '') + ' — ' + why);
    } else {
      finish(rec, 'stale', null, 'NOT APPLIED — ' + why);
    }
  }

  // ---- loading, paging, search ------------------------------------------------------------
  let loadSeq = 0;
  let storeDown = false;
  async function load() {
    const seq = ++loadSeq;
    const qs = 'state=pending&limit=' + PAGE + '&offset=' + offset + (query ? '&q=' + encodeURIComponent(query) : '') +
      (agent ? '&agent=' + encodeURIComponent(agent) : '');
    const r = await api('GET', '/api/requests?' + qs);
    // A fleet's database away: say so (new requests are being denied) and look again.
    if (r.data.error === 'store-unavailable') {
      storeDown = true;
      SG.banner(r.data.message);
      setTimeout(() => { if (seq === loadSeq) load(); }, 2000);
      return;
    }
    if (r.ok && storeDown) { storeDown = false; SG.banner(''); }
    if (!r.ok || seq !== loadSeq) return;
    SG.setServerNow(r.data.nowMs);
    total = r.data.total;
    if (!query && !agent) pending = total;
    offset = r.data.offset || 0;
    const got = r.data.requests;
    const live = new Set(got.map((e) => e.id));
    const complete = offset === 0 && total <= got.length;
    // Only a complete list proves that a request missing from it is no longer pending; in a
    // partial one it may have moved to another page.
    const kept = [];
    for (const rec of items) {
      if (live.has(rec.entry.id)) continue;
      if (rec.done) { kept.push(rec); continue; }
      // Arrived (on the event stream) after this list was asked for: the list cannot know
      // it, so its absence proves nothing.
      if (rec.born >= seq) { kept.push(rec); total++; continue; }
      if (complete && !query && !agent) {
        markDone(rec, 'resolved-elsewhere', null, 'No longer pending (answered elsewhere or expired).');
        kept.push(rec);
      } else if (rec !== open) {
        byId.delete(rec.entry.id);
      }
    }
    items = got.map(record);
    for (const rec of kept) if (matches(rec.entry)) insertSorted(rec);
    if (open && !items.includes(open) && !matches(open.entry)) closeCard();
    pager();
    refreshCount();
    render();
    openLinked();
  }
  // Where this page lies among every match; hidden while one page holds them all.
  function pager() {
    const n = items.filter((rec) => !rec.done).length;
    const complete = offset === 0 && total <= n;
    document.getElementById('more').hidden = complete;
    document.getElementById('more-text').textContent = complete ? '' :
      'Showing ' + (n ? offset + 1 : 0) + '–' + (offset + n) + ' of ' + total + ' pending' +
      (query ? ' matching “' + query + '”' : ' requests') + ' (oldest deadlines first).';
    document.getElementById('prev-btn').disabled = offset === 0;
    document.getElementById('next-btn').disabled = offset + n >= total;
  }
  document.getElementById('next-btn').addEventListener('click', () => { offset += PAGE; load(); window.scrollTo(0, 0); });
  document.getElementById('prev-btn').addEventListener('click', () => { offset = Math.max(0, offset - PAGE); load(); window.scrollTo(0, 0); });

  // A `#r=ID` link (the guard's log line names one per waiting request) opens that card: an
  // explicit choice, so it is opened and focused, fetched on its own if not on this page.
  // Once per link: a later reload of the list never takes the reviewer back to it.
  let linked = '';
  async function openLinked() {
    const m = /^#r=([A-Za-z0-9_-]+)$/.exec(location.hash);
    if (!m || linked === m[1]) return;
    linked = m[1];
    let rec = byId.get(m[1]);
    if (!rec) {
      const r = await api('GET', '/api/requests/' + encodeURIComponent(m[1]));
      if (!r.ok || r.data.state !== 'pending' || byId.has(m[1])) { linked = ''; return; }
      rec = record(r.data);
      insertSorted(rec);
    }
    openRec(rec, { focus: true });
    const i = items.indexOf(rec);
    if (i >= 0 && window.matchMedia('(min-width: 900px)').matches) {
      const top = queue.getBoundingClientRect().top + window.scrollY + i * rows.ROW_H;
      window.scrollTo(0, Math.max(0, top - window.innerHeight / 2));
    }
  }
  window.addEventListener('hashchange', () => { linked = ''; openLinked(); });

  // Search asks the guard (all pending requests, not only this page). The open card closes
  // at once when it no longer matches: a key never acts on a request the search hid.
  const search = document.getElementById('search');
  let searchTimer = 0;
  const agentFilter = document.getElementById('agent-filter');
  function refilter() {
    query = search.value.trim();
    agent = agentFilter.value.trim();
    if (open && !matches(open.entry)) closeCard();
    // Requests the search hides are dropped as data too (the guard's answer brings back
    // what matches), so searching and paging never pile records up.
    items = items.filter((rec) => {
      if (matches(rec.entry)) return true;
      if (rec !== open) byId.delete(rec.entry.id);
      return false;
    });
    render();
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { offset = 0; load(); }, 250);
  }
  search.addEventListener('input', refilter);
  agentFilter.addEventListener('input', refilter);

  // Compact view: the command, its cwd and Allow once / Deny; Allow always only in the full
  // card. Remembered in this browser.
  const compact = document.getElementById('compact');
  function setCompact(on) {
    inboxEl.classList.toggle('compact', on);
    compact.setAttribute('aria-pressed', on ? 'true' : 'false');
    paintSelected();
    try { localStorage.setItem('sg-compact', on ? '1' : ''); } catch (_) { /* private mode */ }
  }
  compact.addEventListener('click', () => setCompact(!inboxEl.classList.contains('compact')));
  try { setCompact(localStorage.getItem('sg-compact') === '1'); } catch (_) { /* ignore */ }

  // Bulk deny: the ticked requests still pending in the list as it is shown, after one
  // confirmation that names each command.
  document.getElementById('bulk-deny').addEventListener('click', async () => {
    const chosen = items.filter((rec) => !rec.done && picks.has(rec.entry.id));
    if (!chosen.length) { SG.banner('Tick the requests to deny first.'); return; }
    const MAX_LISTED = 15;
    const lines = chosen.slice(0, MAX_LISTED).map((rec) => '• ' + SG.visText(commandText(rec.entry)).slice(0, 200));
    if (chosen.length > MAX_LISTED) lines.push('… and ' + (chosen.length - MAX_LISTED) + ' more');
    const n = chosen.length;
    if (!window.confirm('Deny ' + n + ' selected request' + (n > 1 ? 's' : '') + '?\n\n' + lines.join('\n'))) return;
    for (const rec of chosen) await decide(rec, 'deny');
  });

  // ---- live events --------------------------------------------------------------------------
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

  // Who approved so far, on a request that needs several reviewers (live, from any page).
  function approved(d) {
    const rec = byId.get(d.id);
    if (!rec || rec.done) return;
    rec.entry.approvals = d.approvals;
    rec.entry.approvalsRequired = d.approvalsRequired;
    if (rec.card) rec.card.approvals.textContent = SG.approvalsText(rec.entry);
  }

  // An arrival joins the queue (never opened); beyond this page it is only counted.
  function added(e) {
    if (byId.has(e.id)) return;
    pending++;
    refreshCount();
    notify(e);
    if (!matches(e)) return;
    const live = items.filter((rec) => !rec.done);
    const later = offset + live.length < total && live.length > 0 &&
      e.deadlineMs >= live[live.length - 1].entry.deadlineMs;
    total++;
    if (!later) insertSorted(record(e));
    pager();
    render();
  }

  function connect() {
    if (es) es.close();
    es = new EventSource('/api/events');
    const liveEl = document.getElementById('live');
    es.onopen = () => { liveEl.textContent = '● live'; liveEl.className = 'live on'; load(); };
    es.onerror = () => { liveEl.textContent = '○ reconnecting…'; liveEl.className = 'live off'; lost(); };
    es.addEventListener('added', (m) => added(JSON.parse(m.data)));
    const done = (m) => {
      const d = JSON.parse(m.data);
      const rec = byId.get(d.id);
      if (!rec) { pending--; total = Math.max(0, total - 1); refreshCount(); pager(); return; }
      const note = d.state === 'expired' ?
        'EXPIRED — nobody decided in time; the agent was told ' + ((d.decision && d.decision.reason) || 'approval-timeout') + '.' : null;
      finish(rec, d.state, d.decision, note);
    };
    es.addEventListener('resolved', done);
    es.addEventListener('expired', done);
    es.addEventListener('approval', (m) => approved(JSON.parse(m.data)));
    es.addEventListener('resync', load);
    es.addEventListener('signed-out', () => { es.close(); SG.signedOut(); });
  }

  function notify(e) {
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    try { new Notification('sanctum-guard: approval needed', { body: SG.visText(e.summary), tag: e.id }); } catch (_) { /* ignore */ }
  }

  // ---- keys -----------------------------------------------------------------------------------
  // j/k: open the next/previous undecided request (an explicit choice, then read it).
  function move(dir) {
    const at = open ? items.indexOf(open) : -1;
    const order = dir > 0 ? items.slice(at + 1) : items.slice(0, Math.max(0, at)).reverse();
    const next = order.find((rec) => !rec.done);
    if (next) openRec(next, { focus: true });
  }

  SG.gate.keys({ current: () => open, move, decide, commandText });

  function tick() {
    const now = SG.now();
    rows.tick(now);
    if (open && open.card && !open.done) {
      const left = Math.ceil((open.entry.deadlineMs - now) / 1000);
      open.card.countdown.textContent = left > 0 ? left + ' s left' : 'deadline passed';
    }
  }

  document.getElementById('notify').addEventListener('click', async () => {
    if (!('Notification' in window)) { SG.banner('This browser cannot show notifications.'); return; }
    const p = await Notification.requestPermission();
    document.getElementById('notify').textContent = p === 'granted' ? 'Notifications on' : 'Notifications blocked';
  });

  (async () => {
    if (!(await SG.session())) return;
    inboxEl.hidden = false;
    connect();
    setInterval(tick, 250);
  })();
})();
